"""optimus tokenize gives the ids of transformers' GPT-2 tokenizers (label interop).

Trains a byte-level BPE tokenizer (scripts/train_tokenizer) on a corpus this script makes, then
tokenizes texts of every kind the pre-tokenizer and the byte mapping must get right: Unicode
letters and digits of several scripts, whitespace runs (spaces, tabs, newlines, no-break and
ideographic spaces), contractions, emoji with modifiers and joiners, <|endoftext|> inside text, and
invalid UTF-8 (transformers sees bytes.decode("utf-8", errors="replace"), which optimus mirrors).
Each text is one --input file; optimus puts <|endoftext|> between them. The ids in train.tok must
equal, token for token, those of GPT2Tokenizer (Python) and GPT2TokenizerFast (Rust) on the same
vocab.json and merges.txt; and decoding them gives the text back.

Usage: check_bpe_ids.py OPTIMUS REPO_ROOT     (run with .venv/bin/python)
"""

import os
import random
import struct
import subprocess
import sys
import tempfile

from transformers import GPT2Tokenizer, GPT2TokenizerFast

EDGE_CASES = [
    b"Hello world", b" ", b"   ", b"\n\n\n", b"   leading spaces", b"trailing spaces   ", b"tabs\t\tand\ttabs",
    b"lines\n\n  indented\n\t\n", b"I'm sure you're right, they've said he'd go; we'll see, it's fine.",
    b"SHOUTING'S AND DON'T'T 'quoted' '' 'll", b"3.14159 and 1,000,000 and 42nd and 0x1F",
    "Arabic digits ١٢٣ and ½ ⅓ Ⅻ ² superscripts".encode(), "naïve café, Straße, Ελληνικά, русский язык".encode(),
    "日本語のテキスト、中文文本。한국어 텍스트".encode(), "emoji 😀👍🏽 family 👨‍👩‍👧 flag 🇫🇷 heart ❤️".encode(),
    "no-break\u00a0space, em\u2003space, ideographic\u3000space, line\u2028separator".encode(),
    b"a <|endoftext|> in the middle<|endoftext|>and at the end<|endoftext|>",
    b"bad bytes \xff\xfe here, a cut \xc3 char, a cut \xe2\x82 euro, a cut \xf0\x9f\x98 emoji, end",
    b"\xed\xa0\x80 a surrogate, \xc0\xaf overlong, \xf4\x90\x80\x80 past U+10FFFF, \x80 lone continuation",
    b"punctuation!!! ... ??? --- *** ((( ))) @#$%^&*", b"mixed123abc 456 def789 !x! y?z",
    b"\r\n windows line\r\nends\r\n", b"\x00\x01\x02 control \x1b[0m bytes \x7f",
]

FRAGMENTS = [
    "the", "tensor", "grid", "of", "ranks", "sums", "a", "block", "row", "column", "broadcast", "I'm", "you're",
    "they've", "it's", "we'll", "he'd", "don't", "Zürich", "Ångström", "façade", "niño", "Москва", "Αθήνα",
    "東京", "서울", "😀", "👍🏽", "🇯🇵", "2024", "3.5", "١٢", "½", ",", ".", "!", "?", "—", "…", "«", "»", "(", ")",
]
SPACES = [" ", " ", " ", "  ", "   ", "\n", "\n\n", "\t", " \n", "\u00a0", "\u3000", ""]


def random_text(r):
    return "".join(r.choice(FRAGMENTS) + r.choice(SPACES) for _ in range(r.randint(1, 40))).encode()


def read_token_file(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"OPTMTOKN", f"{path} is not a token file"
    version, width, n, text_bytes, vocab = struct.unpack_from("<IIQQI", data, 8)
    fmt = {2: "H", 4: "I"}[width]
    return list(struct.unpack_from(f"<{n}{fmt}", data, 64)), text_bytes, vocab


def main():
    optimus, root = sys.argv[1], sys.argv[2]
    r = random.Random(29)
    texts = EDGE_CASES + [random_text(r) for _ in range(2000)]
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "wb") as f:
            for _ in range(3):
                f.write(b"\n".join(random_text(r) for _ in range(2000)))
        subprocess.run([os.path.join(root, "scripts", "train_tokenizer"), "--vocab", "1000", "--out",
                        os.path.join(tmp, "tok"), corpus], check=True)
        inputs = []
        for k, t in enumerate(texts):
            inputs.append(os.path.join(tmp, f"text_{k:05d}.txt"))
            with open(inputs[-1], "wb") as f:
                f.write(t)
        subprocess.run([optimus, "tokenize", "--tokenizer", os.path.join(tmp, "tok"), "--out",
                        os.path.join(tmp, "shards"), "--val-fraction", "0", "--input"] + inputs, check=True)
        ids, text_bytes, vocab = read_token_file(os.path.join(tmp, "shards", "train.tok"))
        vocab_file, merges_file = os.path.join(tmp, "tok", "vocab.json"), os.path.join(tmp, "tok", "merges.txt")
        status = 0
        for name, tokenizer in [("GPT2Tokenizer", GPT2Tokenizer(vocab_file, merges_file)),
                                ("GPT2TokenizerFast", GPT2TokenizerFast(vocab_file=vocab_file,
                                                                        merges_file=merges_file))]:
            eot = tokenizer.convert_tokens_to_ids("<|endoftext|>")
            expected = []
            for k, t in enumerate(texts):
                if k > 0:
                    expected.append(eot)
                expected += tokenizer.encode(t.decode("utf-8", errors="replace"))
            if ids == expected:
                print(f"ok   {name}: {len(texts)} texts ({text_bytes} bytes, {len(EDGE_CASES)} edge cases), "
                      f"{len(ids)} ids equal, vocabulary {vocab}")
                continue
            status = 1
            at = next((i for i, (a, b) in enumerate(zip(ids, expected)) if a != b), min(len(ids), len(expected)))
            print(f"FAIL {name}: optimus gave {len(ids)} ids, transformers {len(expected)}; first difference at "
                  f"{at}: optimus {ids[at:at + 8]} vs {expected[at:at + 8]} "
                  f"({tokenizer.convert_ids_to_tokens(expected[max(0, at - 4):at + 8])})")
        # Decoding: the ids of each text give back its (replaced) text.
        tokenizer = GPT2Tokenizer(vocab_file, merges_file)
        decoded = tokenizer.decode(ids, clean_up_tokenization_spaces=False)
        original = "<|endoftext|>".join(t.decode("utf-8", errors="replace") for t in texts)
        if decoded != original:
            print("FAIL transformers does not decode optimus's ids to the text")
            status = 1
        sys.exit(status)


if __name__ == "__main__":
    main()
