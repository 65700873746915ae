#!/usr/bin/env python3
"""Writes pretokenize.json: pieces of random strings under each BPE pre-tokenizer pattern.

The pieces are what llama.cpp's unicode_regex_split computes: every match of the pattern and
every run of text between matches, each pattern of a chain applied within the pieces of the one
before. They come from the third-party `regex` module (Perl-style backtracking, like
std::regex), so they check the Go scanners against an independent regex engine. The alphabet
avoids code points whose category changed between Unicode 14 (this Python) and 15 (Go).

Run from this directory: python3 gen_pretokenize.py > pretokenize.json
"""
import json
import random

import regex

PATTERNS = {
    "gpt2": [r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"],
    "llama3": [r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "qwen2": [r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "default": [
        r"[\p{P}\$\+<=>\^~\|]+",
        r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)",
        r"\p{N}+",
        r"[0-9][0-9][0-9]",
    ],
}

ALPHABET = (
    list("abcXYZ019'sStTrReEvVmMlLdD") + [" "] * 6 + ["\n", "\r", "\t", "\x0b", "\x0c"]
    + list("!?.,;:-_()[]{}\"$+<=>^~|`@#%&*/\\")
    + ["\u00a0", "\u3000", "\u2009", "\u0085", "\u1680"]  # non-ASCII whitespace
    + ["é", "ß", "Ж", "λ", "中", "文", "ア", "한"]          # letters
    + ["٣", "²", "Ⅻ", "½"]                                 # numbers (Nd, No, Nl, No)
    + ["\u0301", "\u0903"]                                  # marks
    + ["«", "»", "…", "—", "¿"]                              # punctuation
    + ["€", "©", "→", "😀", "🦙"]                           # symbols
    + ["\x00", "\x07", "\u200b", "\ue000"]                  # controls, format, private use
)


def split(text, patterns):
    pieces = [text] if text else []
    for pat in patterns:
        rx = regex.compile(pat)
        out = []
        for p in pieces:
            pos = 0
            for m in rx.finditer(p):
                if m.start() > pos:
                    out.append(p[pos:m.start()])
                out.append(m.group())
                pos = m.end()
            if pos < len(p):
                out.append(p[pos:])
        pieces = out
    return pieces


def main():
    rng = random.Random(4)
    texts = [
        "", " ", "  ", "\n", " \n ", "Hello world", "  Hello  ", "I've been 'told he's there",
        "'RE you sure? 'M not", "3333333 1234567", "a\r\n\r\nb", "x  \t y", "end   ",
    ]
    for _ in range(300):
        n = rng.randint(1, 24)
        texts.append("".join(rng.choice(ALPHABET) for _ in range(n)))
    cases = []
    for t in texts:
        cases.append({"text": t, "pieces": {k: split(t, v) for k, v in PATTERNS.items()}})
    print(json.dumps(cases, ensure_ascii=True))


main()
