// optimus tokenize: encode text files with a GPT-2 BPE tokenizer into token files (text/tokenize.h).
#include <string>

#include "cli/commands.h"
#include "core/errors.h"
#include "text/tokenize.h"

namespace optimus::cli {

namespace {

struct TokenizeArgs {
  text::TokenizeOptions options;
};

void add_tokenize(CLI::App* cmd, TokenizeArgs& a) {
  text::TokenizeOptions& k = a.options;
  cmd->add_option("--tokenizer", k.tokenizer, "folder with vocab.json and merges.txt")->required();
  cmd->add_option("--input", k.inputs, "text files, one or more")->required();
  cmd->add_option("--out", k.out, "folder for train.tok, val.tok and the tokenizer's files")->required();
  cmd->add_option("--val", k.val_inputs, "text files for val.tok (instead of --val-fraction)");
  cmd->add_option("--val-fraction", k.val_fraction, "the last fraction of the tokens for val.tok")
      ->capture_default_str();
}

int run_tokenize(comm::World& world, TokenizeArgs& a, CLI::App&) {
  if (world.size() > 1) throw core::ConfigError("optimus tokenize runs as one process; run it without mpirun");
  world.print0("%s\n", text::tokenize_corpus(a.options).c_str());
  return 0;
}

}  // namespace

Subcommand tokenize_command(CLI::App& optimus) {
  return subcommand<TokenizeArgs>(optimus, "tokenize",
                                  "encode text files with a GPT-2 BPE tokenizer into token files for train and eval",
                                  add_tokenize, run_tokenize);
}

}  // namespace optimus::cli
