"""Stands in for an agent CLI shaped like `claude -p [PROMPT]`, parsed by argparse as a real one would be: prints
what it understood as JSON, with its argv, so a test can see whether a task became one of its options."""

from __future__ import annotations

import argparse
import json
import sys

parser = argparse.ArgumentParser()
parser.add_argument("-p", "--print", action="store_true")
parser.add_argument("--dangerously-skip-permissions", action="store_true")
parser.add_argument("--output")
parser.add_argument("--prompt-file")
parser.add_argument("prompt", nargs="?")
args = parser.parse_args()
if args.prompt_file:
    with open(args.prompt_file, encoding="utf-8") as handle:
        args.prompt = handle.read()
elif args.prompt is None:
    args.prompt = sys.stdin.read()
print(json.dumps({**vars(args), "argv": sys.argv[1:]}))
