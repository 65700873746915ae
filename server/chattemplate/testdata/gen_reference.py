#!/usr/bin/env python3
"""Writes NAME.jinja.ref.json next to each NAME.jinja of a directory: what Python's jinja2 renders
for every conversation of conversations.json, the way Hugging Face's transformers runs chat
templates (a sandboxed environment with trim_blocks, lstrip_blocks, loop controls,
raise_exception, strftime_now at the current time and a tojson filter). add_generation_prompt is true unless the conversation ends
with the assistant; bos_token and eos_token come from conversations.json's "tokens" (default
<s> and </s>). A refusal (raise_exception) or another error is recorded as {"error": message}.

Usage: python3 gen_reference.py DIR   (this directory's templates: python3 gen_reference.py templates)
"""
import datetime
import glob
import json
import os
import sys

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, indent=None, separators=None, sort_keys=False, ensure_ascii=False):
    return json.dumps(x, indent=indent, separators=separators, sort_keys=sort_keys, ensure_ascii=ensure_ascii)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    spec = json.load(open(os.path.join(here, "conversations.json"), encoding="utf-8"))
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = raise_exception
    env.filters["tojson"] = tojson
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.jinja"))):
        bos, eos = spec["tokens"].get(os.path.basename(path), ["<s>", "</s>"])
        tmpl = env.from_string(open(path, encoding="utf-8").read())
        out = []
        for msgs in spec["conversations"]:
            try:
                text = tmpl.render(messages=msgs, add_generation_prompt=msgs[-1]["role"] != "assistant",
                                   bos_token=bos, eos_token=eos)
                out.append({"out": text})
            except Exception as e:  # noqa: BLE001 - any failure is recorded
                out.append({"error": str(e)})
        with open(path + ".ref.json", "w", encoding="utf-8") as f:
            json.dump(out, f, ensure_ascii=False, indent=1)
            f.write("\n")


main()
