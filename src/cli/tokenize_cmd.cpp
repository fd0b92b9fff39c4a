// optimus tokenize: encode text files with a GPT-2 BPE tokenizer into token files (text/tokenize.h).
#include "cli/commands.h"
#include "core/errors.h"

namespace optimus::cli {

void add_tokenize(CLI::App& optimus, TokenizeCommand& c) {
  text::TokenizeOptions& k = c.options;
  c.app = optimus.add_subcommand("tokenize",
                                 "encode text files with a GPT-2 BPE tokenizer into token files for train and eval");
  c.app->add_option("--tokenizer", k.tokenizer, "folder with vocab.json and merges.txt")->required();
  c.app->add_option("--input", k.inputs, "text files, one or more")->required();
  c.app->add_option("--out", k.out, "folder for train.tok, val.tok and the tokenizer's files")->required();
  c.app->add_option("--val", k.val_inputs, "text files for val.tok (instead of --val-fraction)");
  c.app->add_option("--val-fraction", k.val_fraction, "the last fraction of the tokens for val.tok")
      ->capture_default_str();
}

int run_tokenize(comm::World& world, const TokenizeCommand& c) {
  if (world.size() > 1) throw core::ConfigError("optimus tokenize runs as one process; run it without mpirun");
  world.print0("%s\n", text::tokenize_corpus(c.options).c_str());
  return 0;
}

}  // namespace optimus::cli
