#!/usr/bin/env python3
"""Writes pretokenize.json: how each BPE pre-tokenizer chain cuts strings, as the lengths of
the pieces in code points.

The pieces are what llama.cpp's unicode_regex_split computes: every match of a pattern and
every run of text between matches, each pattern of a chain applied within the pieces of the one
before. This script reproduces the three ways llama.cpp runs a pattern, then matches it with
Python's backtracking regex engine (leftmost alternative first, greedy, like std::regex's
ECMAScript grammar), so the Go scanners are checked against an independent regex engine:

  - the GPT-2 and Llama 3 patterns, which llama.cpp runs through hand-written splitters, are
    matched on the text itself, with \\s the Unicode White_Space set;
  - a pattern holding \\p{N}, \\p{L}, \\p{P}, \\p{M} or \\p{S} is matched the way llama.cpp
    matches it with std::regex: on the "collapsed" text (an ASCII code point stands for itself,
    non-ASCII whitespace for \\x0b and any other non-ASCII code point for one byte per category,
    0xD0 … 0xD5), with each \\p{X} replaced by that byte and the ASCII members llama.cpp lists
    for X (its ASCII symbols leave out "~");
  - any other pattern is matched the way std::wregex matches it: on the code points, with
    non-ASCII whitespace replaced by \\x0b.

In the last two, \\s is the C locale's [\\t\\n\\v\\f\\r ] and $ the end of the piece. The alphabet
avoids code points whose category changed between Unicode 14 (this Python) and 15 (Go).

Run from this directory: python3 gen_pretokenize.py > pretokenize.json
"""
import json
import random
import unicodedata

import regex

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
LLAMA3 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+"
          r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+"
         r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
CUSTOM = {GPT2, LLAMA3}

# The letter class of llama.cpp's deepseek-llm pattern, as ranges of code points.
DEEPSEEK_LETTER_RANGES = [(0x41, 0x5A), (0x61, 0x7A), (0xB5, 0xB5), (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x1BA), (0x1BC, 0x1BF), (0x1C4, 0x293), (0x295, 0x2AF), (0x370, 0x373), (0x376, 0x376), (0x377, 0x377), (0x37B, 0x37D), (0x37F, 0x37F), (0x386, 0x386), (0x388, 0x38A), (0x38C, 0x38C), (0x38E, 0x3A1), (0x3A3, 0x3F5), (0x3F7, 0x481), (0x48A, 0x52F), (0x531, 0x556), (0x10A0, 0x10C5), (0x13A0, 0x13F5), (0x13F8, 0x13FD), (0x1C90, 0x1CBA), (0x1CBD, 0x1CBF), (0x1D00, 0x1D2B), (0x1D6B, 0x1D77), (0x1D79, 0x1D9A), (0x1E00, 0x1F15), (0x1F18, 0x1F1D), (0x1F20, 0x1F45), (0x1F48, 0x1F4D), (0x1F50, 0x1F57), (0x1F59, 0x1F59), (0x1F5B, 0x1F5B), (0x1F5D, 0x1F5D), (0x1F5F, 0x1F7D), (0x1F80, 0x1FB4), (0x1FB6, 0x1FBC), (0x1FBE, 0x1FBE), (0x1FC2, 0x1FC4), (0x1FC6, 0x1FCC), (0x1FD0, 0x1FD3), (0x1FD6, 0x1FDB), (0x1FE0, 0x1FEC), (0x1FF2, 0x1FF4), (0x1FF6, 0x1FFC), (0x2102, 0x2102), (0x2107, 0x2107), (0x210A, 0x2113), (0x2115, 0x2115), (0x2119, 0x211D), (0x2124, 0x2124), (0x2126, 0x2126), (0x2128, 0x2128), (0x212A, 0x212D), (0x212F, 0x2134), (0x2139, 0x2139), (0x213C, 0x213F), (0x2145, 0x2149), (0x214E, 0x214E), (0x2183, 0x2183), (0x2184, 0x2184), (0x2C00, 0x2C7B), (0x2C7E, 0x2CE4), (0x2CEB, 0x2CEE), (0x2CF2, 0x2CF2), (0x2CF3, 0x2CF3), (0xA640, 0xA66D), (0xA680, 0xA69B), (0xA722, 0xA76F), (0xA771, 0xA787), (0xA78B, 0xA78E), (0xAB70, 0xABBF), (0xFB00, 0xFB06), (0xFB13, 0xFB17), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A), (0x10400, 0x1044F), (0x104B0, 0x104D3), (0x104D8, 0x104FB), (0x10C80, 0x10CB2), (0x10CC0, 0x10CF2), (0x118A0, 0x118DF), (0x1E900, 0x1E943)]
DEEPSEEK_LETTERS = "".join(regex.escape(chr(lo)) + ("-" + regex.escape(chr(hi)) if hi > lo else "")
                           for lo, hi in DEEPSEEK_LETTER_RANGES)
CJK = "\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff"

CHAINS = {
    "gpt2": [GPT2],
    "llama3": [LLAMA3],
    "qwen2": [QWEN2],
    "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"],
    "falcon": [r"[\p{P}\$\+<=>\^~\|`]+", GPT2, r"[0-9][0-9][0-9]"],
    "starcoder": [r"\p{N}", GPT2],
    "deepseek-llm": ["[\r\n]", r"\s?[" + DEEPSEEK_LETTERS + "]+", "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
                     r"\s+$", "[" + CJK + "]+", r"\p{N}+"],
    "deepseek-coder": ["[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", "[" + CJK + "]+", r"\p{N}"],
    "deepseek-v3": [r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
                    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?"
                    "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"],
    "bloom": [" ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+"],
    "viking": [" ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+", r"\p{N}"],
    "tekken": [r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?"
               r"((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "gpt-4o": [r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
               r"|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
               r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "seed-coder": [r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}"
                   r"| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "bailingmoe": [r"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                   r"|\s*[\r\n]|\s+(?!\S)|\s+"],
}

WHITESPACE = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F,
              0x3000} | set(range(0x2000, 0x200B))
UNI_WS = "\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
C_WS = "\\t\\n\\x0b\\x0c\\r "

UCAT = {"N": 0xD1, "L": 0xD2, "P": 0xD3, "M": 0xD4, "S": 0xD5}
UCAT_ASCII = {  # llama.cpp's k_ucat_map
    "N": "0-9",
    "L": "A-Za-z",
    "P": "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}",
    "M": "",
    "S": "\\$\\+<->\\^`\\|",
}


def category(c):
    cat = unicodedata.category(c)[0]
    return cat if cat in UCAT else None


def collapse(text):
    out = []
    for c in text:
        if ord(c) < 128:
            out.append(c)
        elif ord(c) in WHITESPACE:
            out.append("\x0b")
        else:
            cat = category(c)
            out.append(chr(UCAT[cat]) if cat else chr(0xD0))
    return "".join(out)


def collapse_regex(rx):
    """llama.cpp's rewrite of \\p{X} for the collapsed text (the [ ] tracking included)."""
    out, inside, i = [], False, 0
    while i < len(rx):
        c = rx[i]
        if c == "[" and (i == 0 or rx[i - 1] != "\\"):
            out.append("[")
            inside = True
        elif inside and c == "]" and rx[i - 1] != "\\":
            out.append("]")
            inside = False
        elif c == "\\" and i + 4 < len(rx) and rx[i + 1] == "p" and rx[i + 2] == "{" and rx[i + 4] == "}" \
                and rx[i + 3] in UCAT:
            body = regex.escape(chr(UCAT[rx[i + 3]])) + UCAT_ASCII[rx[i + 3]]
            out.append(body if inside else "[" + body + "]")
            i += 4
        else:
            out.append(c)
        i += 1
    return "".join(out)


def c_locale(rx, ws):
    """Rewrites \\s, \\S and $ of an ECMAScript pattern for Python, with ws as \\s's members."""
    out, inside, i = [], False, 0
    while i < len(rx):
        c = rx[i]
        if c == "\\" and i + 1 < len(rx):
            e = rx[i + 1]
            if e == "s":
                out.append(ws if inside else "[" + ws + "]")
            elif e == "S":
                assert not inside
                out.append("[^" + ws + "]")
            else:
                out.append(c + e)
            i += 2
            continue
        if c == "[" and not inside:
            inside = True
        elif c == "]" and inside:
            inside = False
        elif c == "$" and not inside:
            c = "\\Z"
        out.append(c)
        i += 1
    return "".join(out)


def compile_pattern(pat):
    """Returns (compiled regex, text transform) as llama.cpp would run pat."""
    if pat in CUSTOM:
        return regex.compile(c_locale(pat, UNI_WS)), lambda t: t
    if any("\\p{" + k + "}" in pat for k in UCAT):
        return regex.compile(c_locale(collapse_regex(pat), C_WS)), collapse
    return (regex.compile(c_locale(pat, C_WS)),
            lambda t: "".join("\x0b" if ord(c) > 0x7F and ord(c) in WHITESPACE else c for c in t))


def split(text, patterns):
    lengths = [len(text)] if text else []
    for pat in patterns:
        rx, transform = compile_pattern(pat)
        t = transform(text)
        out, start = [], 0
        for n in lengths:
            piece, pos = t[start:start + n], 0
            for m in rx.finditer(piece):
                assert m.end() > m.start(), pat
                if m.start() > pos:
                    out.append(m.start() - pos)
                out.append(m.end() - m.start())
                pos = m.end()
            if pos < n:
                out.append(n - pos)
            start += n
        lengths = out
    pieces, start = [], 0
    for n in lengths:
        pieces.append(text[start:start + n])
        start += n
    return pieces


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

# Code points the newer chains treat specially: the deepseek letter, punctuation and CJK ranges,
# the Bloom separators, upper and lower case beyond ASCII (Tekken), fullwidth forms.
EXTRA = (
    list("0123456789") + list("HelloWORLD")
    + ["É", "Ω", "ж", "ǅ", "ƻ", "ʔ", "µ", "×", "÷", "ø", "ß", "ﬀ", "Ａ", "ｚ", "𐐀", "ㄱ"]
    + ["一", "龥", "龦", "ࠀ", "가", "힣", "퟿", "ぁ", "ゟ", "ー", "ヿ", "ㇰ", "ｱ"]
    + ["！", "／", "：", "～", "＂", "０", "‘", "’", "“", "‟", "、", "。", "，", "।", "۔", "،"]
    + ["\u0300", "\u064b", "\u093f"]                       # more marks
    + ["\u2028", "\u202f", "\u205f"]                       # more whitespace
)


def main():
    rng = random.Random(4)
    texts = [
        "", " ", "  ", "\n", " \n ", "Hello world", "  Hello  ", "I've been 'told he's there",
        "'RE you sure? 'M not", "3333333 1234567", "HELLO'S world's DON'T", "I'LL x'd é's", "a\r\n\r\nb", "x  \t y", "end   ",
        "HelloWORLD fooBar ÉtéÉTÉ", "中文 テスト 한국어 ٣٤٥", "a/b//\n\nc", "。。，、 ！？", "x\u0301y \u0301z",
        "(a|b)...c,,d", "µÀ×ß Ωж", "  12 345   6789\t ", "a.b:c~d`e",
    ]
    for _ in range(300):
        n = rng.randint(1, 24)
        texts.append("".join(rng.choice(ALPHABET) for _ in range(n)))
    wide = ALPHABET + EXTRA
    for _ in range(300):
        n = rng.randint(1, 24)
        texts.append("".join(rng.choice(wide) for _ in range(n)))
    cases = []
    for t in texts:
        cases.append({"text": t, "lengths": {k: [len(p) for p in split(t, v)] for k, v in CHAINS.items()}})
    print("[\n" + ",\n".join(json.dumps(c, ensure_ascii=False, separators=(",", ":")) for c in cases) + "\n]")


main()
