"""The commands the documentation shows, read from its source.

Every command shown in README.rst and doc/source/ is a ``$ `` line in a
``.. code-block:: console`` block, and every such block is preceded by a
comment that says what a test does with it:

``.. doc-example: run``
    run each command in order and compare what it prints (stdout and
    stderr together) with the lines below it, up to the next ``$ `` line;
``.. doc-example: start``
    the block's one command is a server: start it in the background and
    wait until it answers; the block shows no output;
``.. doc-example: skip REASON``
    not run, for the reason given (root, systemd, a real deployment).

A page is one session: its examples run in document order against one
fresh deployment (see tests/functional/test_doc_examples.py), so a page
sets up what its later examples use (``db sync``, ``scheduler-fleet``, a
server) in commands of its own.

What the comparison lets vary (:func:`normalise`):

- a UUID matches any UUID;
- a run of blanks after text, or of two dashes or more, matches a run of
  any length, so table columns may be wider or narrower;
- a line ``...`` matches any number of lines, and ``...`` within a line
  any text;
- the paths the documentation uses stand for the test's own
  (:data:`PATHS`), and the broker's address is ``127.0.0.1:5672``.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
import re

ROOT = Path(__file__).resolve().parent.parent

#: The files whose commands are checked.
def sources() -> list[Path]:
    return [ROOT / "README.rst",
            *sorted((ROOT / "doc" / "source").rglob("*.rst"))]


#: Paths as the documentation writes them, and what each stands for in a
#: test: ``{D}`` its directory, ``{S}`` its state directory, a path of the
#: same length as the one shown so that tables are laid out alike.
PATHS = {
    "/etc/scheduler/scheduler.conf": "{D}/scheduler.conf",
    "/var/lib/scheduler": "{S}",
}

_MARK = re.compile(r"^\.\. doc-example: (run|start|skip)\b\s*(.*)$")
_CODE = re.compile(r"^(\s*)\.\. (?:code-block|code|sourcecode)::\s*(\S*)\s*$")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                   r"[0-9a-f]{12}", re.I)


@dataclasses.dataclass
class Command:
    line: int                  # where it is shown, 1-based
    text: str                  # without the "$ "
    output: list[str]          # the lines shown below it


@dataclasses.dataclass
class Example:
    path: Path
    line: int
    mode: str                  # run | start | skip
    reason: str
    commands: list[Command]

    def where(self, command: Command | None = None) -> str:
        line = command.line if command else self.line
        return f"{self.path.relative_to(ROOT)}:{line}"


def _block(lines: list[str], start: int) -> tuple[list[tuple[int, str]], int]:
    """The literal lines of the block whose directive or ``::`` line is
    ``lines[start]`` (dedented, with 1-based numbers), and the index after
    it."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    body: list[tuple[int, str]] = []
    i = start + 1
    while i < len(lines):
        line = lines[i]
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append((i + 1, line))
        i += 1
    while body and not body[-1][1].strip():
        body.pop()
    # Directive options (":caption: ...") and the blank line after them.
    while body and (not body[0][1].strip()
                    or body[0][1].strip().startswith(":")):
        body.pop(0)
    if not body:
        return [], i
    margin = min(len(t) - len(t.lstrip()) for _, t in body if t.strip())
    return [(n, t[margin:].rstrip()) for n, t in body], i


def _commands(body: list[tuple[int, str]]) -> list[Command]:
    commands: list[Command] = []
    i = 0
    while i < len(body):
        number, text = body[i]
        if text.startswith("$ "):
            command = text[2:]
            while command.endswith("\\") and i + 1 < len(body):
                i += 1
                command = command[:-1].rstrip() + " " + body[i][1].strip()
            commands.append(Command(number, command, []))
        elif commands:
            commands[-1].output.append(text)
        i += 1
    return commands


def parse(path: Path) -> tuple[list[Example], list[str]]:
    """The examples in one file, and its problems: a ``$ `` line outside a
    marked console block, a mark with no block, a skip with no reason."""
    lines = path.read_text(encoding="utf-8").splitlines()
    examples: list[Example] = []
    problems: list[str] = []
    rel = path.relative_to(ROOT)
    pending: tuple[int, str, str] | None = None
    i = 0
    while i < len(lines):
        text = lines[i]
        mark = _MARK.match(text)
        if mark:
            if pending:
                problems.append(f"{rel}:{pending[0]}: doc-example mark "
                                f"without a console block after it")
            pending = (i + 1, mark.group(1), mark.group(2).strip())
            i += 1
            continue
        code = _CODE.match(text)
        if code or text.rstrip().endswith("::"):
            body, after = _block(lines, i)
            commands = _commands(body)
            if code and code.group(2) != "console":
                code = None
            if code and pending:
                number, mode, reason = pending
                if mode == "skip" and not reason:
                    problems.append(f"{rel}:{number}: skip needs a reason")
                if mode == "start" and (len(commands) != 1
                                        or commands[0].output):
                    problems.append(f"{rel}:{number}: a start block holds "
                                    f"one command and no output")
                if not commands:
                    problems.append(f"{rel}:{number}: no $ command in the "
                                    f"block")
                examples.append(Example(path, i + 1, mode, reason,
                                        commands))
                pending = None
            elif commands:
                problems.append(
                    f"{rel}:{commands[0].line}: a command shown outside a "
                    f"'.. doc-example:' console block")
            i = max(after, i + 1)
            continue
        if text.strip() and pending:
            problems.append(f"{rel}:{pending[0]}: doc-example mark not "
                            f"followed by '.. code-block:: console'")
            pending = None
        i += 1
    if pending:
        problems.append(f"{rel}:{pending[0]}: doc-example mark at the end")
    return examples, problems


def normalise(lines: list[str]) -> list[str]:
    """Lines as compared: see the module's docstring."""
    out = []
    for line in lines:
        line = _UUID.sub("<uuid>", line.rstrip())
        line = re.sub(r"-{2,}", "--", line)
        line = re.sub(r"(?<=\S) +", " ", line)
        out.append(line)
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` is what ``expected`` shows, ``...`` lines and
    ``...`` within a line matching anything."""
    patterns = []
    for line in normalise(expected):
        if line.strip() == "...":
            patterns.append(r"(?:[^\n]*\n)*?")
        else:
            parts = [re.escape(p) for p in line.split("...")]
            patterns.append("[^\n]*".join(parts) + r"\n")
    text = "".join(line + "\n" for line in normalise(actual))
    return re.fullmatch("".join(patterns), text) is not None
