"""``.. cli-help:: MODULE:FUNCTION``: a command's ``--help``, generated.

``FUNCTION`` either builds the command's ``argparse`` parser (the
default), whose help and each subcommand's are shown in turn, or, with
``:main:``, is the command's ``main(argv)``, called with ``--help`` (the
commands whose options oslo.config parses). ``:prog:`` names the
command. Nothing is run in a subprocess: the help is what the code in
this checkout prints.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import sys

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective


def _load(spec: str):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _walk(parser: argparse.ArgumentParser, words: list[str]):
    """(command words, help) for ``parser`` and every subcommand below."""
    yield words, parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, words + [name])


def _main_help(main, prog: str) -> str:
    """What ``prog --help`` prints; oslo.config names the program after
    ``sys.argv[0]``, which is sphinx-build's here."""
    out = io.StringIO()
    argv0 = sys.argv[0]
    sys.argv[0] = prog
    try:
        with contextlib.redirect_stdout(out), \
                contextlib.suppress(SystemExit):
            main(["--help"])
    finally:
        sys.argv[0] = argv0
    return out.getvalue()


class CliHelp(SphinxDirective):
    required_arguments = 1
    option_spec = {"main": directives.flag,
                   "prog": directives.unchanged}

    def run(self):
        target = _load(self.arguments[0])
        prog = self.options.get("prog", "")
        if "main" in self.options:
            helps = [([], _main_help(target, prog))]
        else:
            helps = list(_walk(target(), []))
        result = []
        for words, text in helps:
            if words:
                result.append(nodes.rubric(text=" ".join([prog, *words])))
            block = nodes.literal_block(text.rstrip(), text.rstrip())
            block["language"] = "text"
            result.append(block)
        return result


def setup(app):
    app.add_directive("cli-help", CliHelp)
    return {"parallel_read_safe": True, "version": "1"}
