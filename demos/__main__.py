"""``python -m demos``: the command line of the course package.

Subcommands live in their own modules and are imported only when chosen, so
that ``python -m demos info`` does not pay for importing TensorFlow. Each
module provides ``add_arguments(parser)`` and ``main(args) -> int``; the table of them is
the course manifest's.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from demos import manifest

# (words on the command line) -> (module, one-line help): the course's own commands, then
# each chapter's benchmarks, from the course manifest (demos/course.toml)
COMMANDS: dict[tuple[str, ...], tuple[str, str]] = {
    command.words: (command.module, command.help) for command in manifest.course().commands
}


def _usage() -> str:
    width = max(len(" ".join(words)) for words in COMMANDS)
    lines = ["usage: python -m demos COMMAND [options]", "", "commands:"]
    for words, (_, text) in COMMANDS.items():
        lines.append(f"  {' '.join(words):<{width}}  {text}")
    lines.append("")
    lines.append("'python -m demos COMMAND --help' shows a command's options.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    for words, (module_name, text) in sorted(COMMANDS.items(), key=lambda kv: -len(kv[0])):
        if tuple(argv[: len(words)]) == words:
            module = importlib.import_module(module_name)
            parser = argparse.ArgumentParser(
                prog="python -m demos " + " ".join(words), description=text
            )
            module.add_arguments(parser)
            return int(module.main(parser.parse_args(argv[len(words) :])) or 0)
    if argv and argv[0] not in ("-h", "--help", "help"):
        print(f"unknown command: {' '.join(argv)}\n", file=sys.stderr)
        print(_usage(), file=sys.stderr)
        return 2
    print(_usage())
    return 0


if __name__ == "__main__":
    sys.exit(main())
