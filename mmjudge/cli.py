"""The ``mmjudge`` command line. Each entry of :data:`mmjudge.commands.COMMANDS` adds one sub-command: a
function ``add_parser(subparsers)`` that adds its parser and sets ``func``.

A user's mistake (a bad option, a missing file, an unreadable input…) ends in ONE line,
``mmjudge <command>: error: <what is wrong and how to fix it>``, and exit status 2; ``--debug`` shows
the traceback instead. A reader that goes away (``mmjudge score … | head -3``) ends the command quietly with
status 141, as ``cat`` does (128 + SIGPIPE), except that a run writing ``--output`` goes on to complete it
(whether stdout's reader or stderr's went away).
"""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
import sys
from collections.abc import Sequence
from typing import Any

from mmjudge._version import __version__
from mmjudge.errors import MissingDependencyError, OutputClosed, ServiceError

# Exceptions that mean "the user gave something wrong": their message names the item and the fix.
USER_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,  # includes JudgeCapabilityError and UnicodeDecodeError
    FileNotFoundError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
    FileExistsError,
    MissingDependencyError,  # Java for METEOR and the like: the message says how to install it
    ImportError,  # an optional package a model's processor needs (SmolVLM's num2words): named with its pip command
    ServiceError,  # a judge server that is down, unreachable or refuses the request (names the endpoint)
)

EXIT_OUTPUT_CLOSED = 141  # 128 + SIGPIPE: what a shell reports for `cat` writing into a closed pipe

EPILOG = """\
examples:
  mmjudge score --examples --model smollm2              # offline, a real small text-only judge
  mmjudge score --task ic --image photo.jpg --text "A dog runs." --model Qwen/Qwen2.5-VL-7B-Instruct
  mmjudge metaeval --dataset mmhe --scores bleu.jsonl --out out/
  mmjudge dataset list

add --debug before the command to see a traceback instead of a one-line error."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line too (``--help`` still shows the usage)."""

    def error(self, message: str):  # type: ignore[override]
        if "expected one argument" in message:
            message += " (a value starting with '-' is written --option=VALUE, e.g. --box=-1,2,3,4)"
        self.exit(2, f"{self.prog}: error: {message}; see {self.prog} --help\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="mmjudge",
        description="Evaluate text written by vision-language models.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mmjudge {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the full traceback when a command fails")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    import importlib

    from mmjudge.commands import COMMANDS

    for name in COMMANDS.names():
        before = set(sub.choices)
        COMMANDS.get(name)(sub)
        doc = importlib.import_module(COMMANDS.module_name(name)).__doc__ or ""
        for added in set(sub.choices) - before:
            _document(sub.choices[added], doc)
    return parser


def _document(command: argparse.ArgumentParser, doc: str) -> None:
    """A command without its own description and examples gets them from its module docstring (first
    line; the ``Examples::`` block), so every ``--help`` shows both."""
    lines = doc.strip().splitlines()
    if not command.description and lines:
        command.description = lines[0].replace("``", "")
    if not command.epilog and "Examples::" in doc:
        block = doc.split("Examples::", 1)[1].strip("\n").splitlines()
        examples = []
        for line in block:
            if line.strip() and not line.startswith((" ", "\t")):
                break  # the end of the indented block
            if line.strip():
                examples.append("  " + line.strip())
        command.epilog = "examples:\n" + "\n".join(examples)
        command.formatter_class = argparse.RawDescriptionHelpFormatter


def describe_error(err: BaseException) -> str:
    """One line for a user's mistake: the exception's own message, or a clear sentence for the few
    library errors whose text does not say what to do."""
    if isinstance(err, UnicodeDecodeError):
        return (
            f"the input is not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset {err.start}); save it as UTF-8."
        )
    if isinstance(err, ImportError):
        from mmjudge.models import missing_package

        package = missing_package(err)
        if package:
            return f"the optional package {package!r} is not installed: pip install {package}"
    if isinstance(err, sqlite3.Error):
        return f"the judge cache cannot be used ({err}); pass --cache FILE.sqlite or --no-cache."
    if isinstance(err, OSError) and err.filename and not str(err).count(str(err.filename)):
        return f"{err.filename}: {err.strerror or err}"
    text = " ".join(str(err).split())  # one line, whatever the message held
    return text or type(err).__name__


def unknown_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> None:
    """One line naming the sub-command, the unknown argument and the closest real option."""
    import difflib

    command = getattr(args, "command", None)
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    target = sub.choices.get(command) if sub is not None and command else parser
    options = [o for action in target._actions for o in action.option_strings]
    flag = next((e.split("=")[0] for e in extra if e.startswith("-")), extra[0])
    close = difflib.get_close_matches(flag, options, n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    target.exit(
        2, f"{target.prog}: error: unrecognized arguments: {' '.join(extra)}{hint} (see {target.prog} --help)\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        unknown_arguments(parser, args, extra)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from mmjudge import distributed

    if not distributed.is_main():
        # Under torchrun / accelerate launch the other processes only answer their share of the judge's
        # requests (mmjudge.distributed); everything they would print repeats the main process's output.
        import contextlib
        import os

        os.environ["TQDM_DISABLE"] = "1"
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            return _run(args)
    return _run(args)


def _notice(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as one line a user can read (``mmjudge: note: …``), not Python's two lines that end with a
    line of package source."""
    text = " ".join(str(message).split())
    print(f"mmjudge: note: {text}", file=file or sys.stderr)


def _run(args: argparse.Namespace) -> int:
    import warnings

    shown = warnings.showwarning
    if not args.debug:
        warnings.showwarning = _notice
    streams = sys.stdout, sys.stderr
    # A run writing --output completes its file whoever reads what it prints (its rows, notes, progress bars);
    # one whose product is what it prints stops once that reader is gone.
    stop = not getattr(args, "output", None)
    sys.stdout, sys.stderr = PipeGuard(sys.stdout, stop), PipeGuard(sys.stderr, stop)
    try:
        return int(args.func(args) or 0)
    except OutputClosed:
        return EXIT_OUTPUT_CLOSED  # the reader is gone: nothing more to say, and no one to say it to
    except (*USER_ERRORS, ModuleNotFoundError, sqlite3.Error) as err:
        if args.debug:
            raise
        with contextlib.suppress(OutputClosed):  # stderr's reader is gone too: nothing can be said
            print(f"mmjudge {args.command}: error: {describe_error(err)}", file=sys.stderr)
        return 2
    finally:
        sys.stdout, sys.stderr = streams
        warnings.showwarning = shown  # main() called from Python (tests, notebooks) leaves warnings as it found them


class PipeGuard:
    """A text stream (stdout, stderr) whose reader may go away (``| head -3``): every write after the first that
    meets a closed pipe goes nowhere — as does Python's flush at exit (the descriptor is pointed at
    ``/dev/null``), so no "Exception ignored … BrokenPipeError" follows. With ``stop`` (the command's product is
    what it prints), that first write raises :class:`~mmjudge.errors.OutputClosed` (not an ``OSError``, so no
    handler of file errors takes it for one); without, the command goes on unheard (it is writing a file)."""

    def __init__(self, stream: Any, stop: bool = True):
        self._stream, self.stop = stream, stop
        self.closed_pipe = False

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._gone()
        return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()

    def _gone(self) -> None:
        import os

        if self.closed_pipe:
            return
        self.closed_pipe = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass
        self._stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
        if self.stop:
            raise OutputClosed("the reader of this output went away")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
