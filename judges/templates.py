"""Judge prompt templates: prompts are data, looked up by name in one registry.

A template is jinja2 text with named placeholders plus a declaration of the verdict it
asks for: a regular expression with a named group ``verdict`` (what generate mode
parses) and the text that comes right before the verdict token (what logprob mode
scores after). The built-in templates keep the output format each judge family was
trained on; the prose is our own.

Two kinds of template:

* ``pairwise``: sees ``instruction``, ``response_a``, ``response_b`` (and optionally
  ``reference``, ``rubric``) and names a winner: label ``A``, ``B`` or its tie label.
* ``absolute``: sees one ``response`` and gives it a score from 1 to 5; a pair is
  judged by scoring both responses, and equal scores are a tie.

A user template is a jinja2 file that declares the same things in a leading comment::

    {#
    verdict: \\[\\[(?P<verdict>[ABC])\\]\\]
    tie: C
    logprob_prefix: [[
    system: You compare two answers to one question.
    #}
    Question: {{ instruction }} ...

Keys: ``verdict`` (required), ``kind`` (``pairwise``, default, or ``absolute``),
``tie`` (the label meaning a tie, pairwise only), ``logprob_prefix`` (needed for
``--mode logprob``; a JSON string when it must keep trailing spaces), ``system``,
``rubric`` (the default for ``{{ rubric }}``), ``grades`` (graded verdicts, pairwise
only: a JSON object from each label the pattern captures to ``[winner label, strength]``,
e.g. Arena-Hard's ``{"A>>B": ["A", 2], "A>B": ["A", 1], "A=B": ["C", 0], ...}`` with
``tie: C``; records then carry ``strength``).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import jinja2
from jinja2 import meta as jinja_meta
from jinja2 import nodes
from jinja2.compiler import CodeGenerator
from jinja2.sandbox import SandboxedEnvironment, SecurityError

__all__ = ["BUILTIN", "JudgeTemplate", "TemplateError", "get_template"]

WORD_JOINER = "\u2060"
PAIRWISE = "pairwise"
ABSOLUTE = "absolute"
SCORES = ("1", "2", "3", "4", "5")

_REQUIRED = {PAIRWISE: {"instruction", "response_a", "response_b"}, ABSOLUTE: {"instruction", "response"}}
_ALLOWED = {
    PAIRWISE: _REQUIRED[PAIRWISE] | {"reference", "rubric"},
    ABSOLUTE: _REQUIRED[ABSOLUTE] | {"reference", "rubric"},
}

MAX_TEMPLATE_BYTES = 64 * 1024
LOAD_TIMEOUT_S = 5.0  # the trial render at load
RENDER_TIMEOUT_S = 5.0  # every render
# The largest string a render may build or output: 4M characters are about a million
# tokens, beyond any judge's context. Everything a render builds (joins, repetitions,
# filter and method results, items put in lists) is charged to it; it may build at most
# _ALLOCATION_FACTOR times the cap in all.
MAX_RENDER_CHARS = 4_000_000
_ALLOCATION_FACTOR = 8
_MAX_INT_BITS = 4096  # results of ** and * on numbers
_MAX_REPEAT = 100_000  # items of a string or list repeated with *
_BIG_NUMBER = re.compile(r"\d{7,}")  # a width or precision in a format string


class RenderLimit(SecurityError):
    """A render ran past its time or size bound."""


class _Budget(threading.local):
    """The render running in this thread: its deadline and what it has built so far.
    Thread-local, so renders in concurrent judge threads are bounded each on its own."""

    deadline: float | None = None
    timeout_s: float = 0.0
    charged: int = 0


_BUDGET = _Budget()


def _tick() -> None:
    if _BUDGET.deadline is not None and time.monotonic() > _BUDGET.deadline:
        raise RenderLimit(f"rendering took longer than {_BUDGET.timeout_s:g} s")


def _size(value) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, (list, tuple, dict, set)):
        return len(value) + sum(len(x) for x in value if isinstance(x, str))
    return 0


def _charge(n: int) -> None:
    """Count ``n`` characters built by the render; refuse a string over the cap, or a
    render that has built too much in all."""
    if n > MAX_RENDER_CHARS:
        raise RenderLimit(f"a string of {n:,} characters; a render may build at most {MAX_RENDER_CHARS:,}")
    _tick()
    if _BUDGET.deadline is not None:
        _BUDGET.charged += n
        if _BUDGET.charged > _ALLOCATION_FACTOR * MAX_RENDER_CHARS:
            raise RenderLimit(f"the render built more than {_ALLOCATION_FACTOR * MAX_RENDER_CHARS:,} characters")


def _precheck(name: str, obj, args: tuple, kwargs: dict) -> None:
    """Refuse before the work an operation whose result would be over the cap: a width
    (center, indent, ljust, format specs), a replacement multiplied by its count, a join."""
    values = [obj, *args, *kwargs.values()]
    if any(isinstance(v, int) and not isinstance(v, bool) and v > MAX_RENDER_CHARS for v in values):
        raise RenderLimit(f"{name}: a width or count over {MAX_RENDER_CHARS:,} characters")
    if name in ("format", "format_map") and isinstance(obj, str) and _BIG_NUMBER.search(obj):
        raise RenderLimit(f"{name}: a width or precision too large for a template")
    if name == "replace" and len(args) >= 2 and all(isinstance(x, str) for x in (obj, *args[:2])) and args[0]:
        _charge(len(obj) + obj.count(args[0]) * len(args[1]))
    if name == "join":
        items = obj if not isinstance(obj, str) else (args[0] if args else ())
        if isinstance(items, (list, tuple)):
            _charge(sum(len(str(x)) if isinstance(x, str) else 16 for x in items))


def _bounded_filter(name: str, func):
    @functools.wraps(func)
    def bounded(*args, **kwargs):
        # Filters marked pass_context / pass_eval_ctx / pass_environment get that first.
        head = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0
        value, rest = (args[head], args[head + 1:]) if len(args) > head else (None, ())
        _tick()
        _precheck(name, value, rest, kwargs)
        result = func(*args, **kwargs)
        _charge(_size(result))
        return result
    return bounded


def _guarded_loop(iterable):
    for item in iterable:
        _tick()
        yield item


class _BoundedCode(CodeGenerator):
    """Compiles every ``for`` loop to iterate through ``environment.guarded_loop`` and
    every ``~`` to join through ``environment.concat``: the points a render checks its
    time and size bounds (loops run without any call a sandbox sees)."""

    def visit_For(self, node: nodes.For, frame) -> None:
        node = copy.copy(node)
        node.iter = nodes.Call(nodes.EnvironmentAttribute("guarded_loop"), [node.iter], [], None, None)
        super().visit_For(node, frame)

    def visit_Concat(self, node: nodes.Concat, frame) -> None:
        if frame.eval_ctx.volatile or frame.eval_ctx.autoescape:
            return super().visit_Concat(node, frame)
        self.write("concat(map(str, (")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write(")))")


class _BoundedSandbox(SandboxedEnvironment):
    """The sandbox, bounded in time and size on every render (see :func:`_tick`,
    :func:`_charge`): loops, calls, joins, ``~``, ``+``, ``*``, ``%``, filters and the
    output itself check the render's deadline and the size of what they build.

    Jinja folds constant expressions while compiling, so ``{{ 9**999999999 }}`` would
    hang the load itself; intercepted operators are never folded, and run here, where an
    oversized result is refused before it is computed.
    """

    code_generator_class = _BoundedCode
    intercepted_binops = frozenset({"**", "*", "+", "%"})
    guarded_loop = staticmethod(_guarded_loop)

    def __init__(self, **options):
        super().__init__(**options)
        self.filters = {name: _bounded_filter(name, f) for name, f in self.filters.items()}

    def concat(self, pieces) -> str:  # every buffer join, the output, and ~
        out, total = [], 0
        for piece in pieces:
            total += len(piece)
            if total > MAX_RENDER_CHARS:
                raise RenderLimit(f"the output passed {MAX_RENDER_CHARS:,} characters")
            out.append(piece)
        _charge(total)
        return "".join(out)

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 - jinja's own signature
        _tick()
        name = getattr(__obj, "__name__", "")
        if isinstance(getattr(__obj, "__self__", None), (str, list)):  # a method of a string or list
            _precheck(name, __obj.__self__, args, kwargs)
            if name in ("append", "insert", "extend"):  # a list grown by the template
                _charge(sum(_size(x) if not isinstance(x, str) else len(x) for x in args))
        result = super().call(__context, __obj, *args, **kwargs)
        _charge(_size(result) if isinstance(result, str) else 0)
        return result

    def call_binop(self, context, op: str, left, right):
        _tick()
        ints = isinstance(left, int) and isinstance(right, int)
        if op == "**":
            if ints and right > 0 and abs(left) > 1 and abs(left).bit_length() * right > _MAX_INT_BITS:
                raise SecurityError(f"{left} ** {right} is too large for a template")
            return left**right
        if op == "+":
            _charge(_size(left) + _size(right))
            return left + right
        if op == "%":
            if isinstance(left, str) and _BIG_NUMBER.search(left):
                raise RenderLimit("a width or precision too large for a template")
            result = self.binop_table["%"](left, right)
            _charge(_size(result))
            return result
        sizes = [len(x) for x in (left, right) if isinstance(x, (str, list, tuple))]
        counts = [x for x in (left, right) if isinstance(x, int)]
        if sizes and counts and sizes[0] * counts[0] > _MAX_REPEAT:
            raise SecurityError("a repetition too large for a template")
        if ints and left.bit_length() + right.bit_length() > _MAX_INT_BITS:
            raise SecurityError("a product too large for a template")
        return left * right


@contextlib.contextmanager
def _bounded_render(timeout_s: float):
    """A deadline and a size budget for the renders in this block (the outermost block's
    bound holds for nested ones)."""
    if _BUDGET.deadline is not None:
        yield
        return
    _BUDGET.deadline, _BUDGET.timeout_s, _BUDGET.charged = time.monotonic() + timeout_s, timeout_s, 0
    try:
        yield
    finally:
        _BUDGET.deadline = None


# Sandboxed because a template file is user input; StrictUndefined so a misspelt
# placeholder fails at load time instead of rendering as an empty string.
_ENV = _BoundedSandbox(undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                       keep_trailing_newline=False, autoescape=False)


class TemplateError(ValueError):
    """A template that cannot be used: unknown name, bad declaration, bad placeholders."""


@dataclass(frozen=True)
class JudgeTemplate:
    name: str
    kind: str
    user: str
    verdict: str
    system: str = ""
    tie: str | None = None
    logprob_prefix: str | None = None
    rubric: str = ""
    source: str = "builtin"
    # Graded verdicts: captured label -> (winner label A/B/tie, strength), e.g. "A>>B" -> ("A", 2).
    grades: dict[str, tuple[str, int]] | None = None
    _compiled: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in (PAIRWISE, ABSOLUTE):
            raise TemplateError(f"{self.name}: kind must be {PAIRWISE!r} or {ABSOLUTE!r}, got {self.kind!r}")
        try:
            pattern = re.compile(self.verdict)
        except re.error as exc:
            raise TemplateError(f"{self.name}: verdict pattern does not compile: {exc}") from None
        if "verdict" not in pattern.groupindex:
            raise TemplateError(f"{self.name}: verdict pattern needs a named group (?P<verdict>...)")
        if self.kind == ABSOLUTE and self.tie is not None:
            raise TemplateError(f"{self.name}: an absolute template has no tie label (equal scores are a tie)")
        if self.grades is not None:
            self._check_grades()
        try:
            parsed = _ENV.parse(self.user)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateError(f"{self.name}: line {exc.lineno}: {exc.message}") from None
        used = jinja_meta.find_undeclared_variables(parsed)
        missing = _REQUIRED[self.kind] - used
        unknown = used - _ALLOWED[self.kind]
        if missing:
            raise TemplateError(f"{self.name}: a {self.kind} template must use {', '.join(sorted(missing))}")
        if unknown:
            raise TemplateError(
                f"{self.name}: unknown placeholder(s) {', '.join(sorted(unknown))}; "
                f"available: {', '.join(sorted(_ALLOWED[self.kind]))}"
            )
        self._compiled["pattern"] = pattern
        self._compiled["user"] = _ENV.from_string(self.user)

    def _check_grades(self) -> None:
        if self.kind != PAIRWISE:
            raise TemplateError(f"{self.name}: only a pairwise template can declare grades")
        winners = ("A", "B") + ((self.tie,) if self.tie else ())
        if not isinstance(self.grades, dict) or not self.grades:
            raise TemplateError(f"{self.name}: grades must map each verdict label to [winner label, strength]")
        for label, grade in self.grades.items():
            ok = isinstance(grade, (list, tuple)) and len(grade) == 2 and grade[0] in winners and \
                isinstance(grade[1], int) and not isinstance(grade[1], bool) and grade[1] >= 0
            if not ok:
                raise TemplateError(f"{self.name}: grade {label!r}: expected [one of {', '.join(winners)}, "
                                    f"a whole number >= 0], got {grade!r}")

    @property
    def pattern(self) -> re.Pattern:
        return self._compiled["pattern"]

    @property
    def labels(self) -> tuple[str, ...]:
        """Every verdict label the pattern may capture."""
        if self.kind == ABSOLUTE:
            return SCORES
        if self.grades:
            return tuple(self.grades)
        return ("A", "B") + ((self.tie,) if self.tie else ())

    @cached_property
    def sha256(self) -> str:
        """Hash of everything that shapes the prompt or the reading of the verdict."""
        spec = {k: getattr(self, k) for k in ("kind", "system", "user", "verdict", "tie", "logprob_prefix", "rubric")}
        if self.grades:  # only when declared, so the hashes of ungraded templates stay as they were
            spec["grades"] = {k: list(v) for k, v in self.grades.items()}
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode("utf-8")).hexdigest()

    def scoring_split(self) -> tuple[str, list[str]]:
        """(text appended to the rendered prompt, the verdict tokens scored after it).

        Trailing whitespace of the declared prefix moves onto the verdict tokens, because
        BPE tokenizers attach a leading space to the next word: "[RESULT]" + " A" is how
        the model itself would write it, "[RESULT] " + "A" is not.
        """
        if self.logprob_prefix is None:
            raise TemplateError(f"{self.name}: no logprob_prefix declared, so it cannot be used in logprob mode")
        prefix = self.logprob_prefix.rstrip()
        gap = self.logprob_prefix[len(prefix):]
        return prefix, [gap + label for label in self.labels]

    def defuse(self, text: str) -> str:
        """``text`` with each verdict marker in it broken by an invisible word joiner.

        A judged answer that holds "[RESULT] A" would otherwise put the verdict in the
        judge's mouth: a judge that quotes it writes a marker. Defused, the text reads the
        same and a quote of it is no verdict. (A pattern that still matches the defused
        text is left; the runner flags such verdicts anyway, see :meth:`markers_in`.)
        """
        return self.pattern.sub(lambda m: m.group(0)[0] + WORD_JOINER + m.group(0)[1:], text)

    def markers_in(self, **texts: str | None) -> list[str]:
        """The names of ``texts`` that hold a verdict marker: a verdict on them is suspect."""
        return [name for name, text in texts.items() if text and self.pattern.search(text)]

    def messages(self, instruction: str, response_a: str, response_b: str,
                 reference: str | None = None) -> list[list[dict]]:
        """The judge prompts for one ordered pair: one chat for pairwise, one per response for absolute.

        Verdict markers inside the judged texts are defused (:meth:`defuse`)."""
        instruction, response_a, response_b = (self.defuse(t) for t in (instruction, response_a, response_b))
        common = {"instruction": instruction, "reference": self.defuse(reference) if reference else None,
                  "rubric": self.rubric}
        if self.kind == PAIRWISE:
            users = [self._render(common | {"response_a": response_a, "response_b": response_b})]
        else:
            users = [self._render(common | {"response": r}) for r in (response_a, response_b)]
        head = [{"role": "system", "content": self.system}] if self.system else []
        return [head + [{"role": "user", "content": u}] for u in users]

    def _render(self, values: dict) -> str:
        try:
            with _bounded_render(RENDER_TIMEOUT_S):
                return self._compiled["user"].render(**values).strip()
        except SecurityError as exc:  # a bound (RenderLimit) or an operation the sandbox refuses
            raise TemplateError(f"{self.name}: {exc}") from None

    def describe(self) -> dict:
        """What a manifest records about the template."""
        out = {"name": self.name, "kind": self.kind, "source": self.source, "sha256": self.sha256,
               "verdict_pattern": self.verdict, "tie": self.tie, "logprob_prefix": self.logprob_prefix}
        if self.grades:
            out["grades"] = {k: list(v) for k, v in self.grades.items()}
        return out


# --- built-in templates ----------------------------------------------------------------

PROMETHEUS_SYSTEM = (
    "You are an impartial evaluator. You judge responses only by the rubric you are given "
    "and write clear, specific feedback before your verdict."
)

GENERAL_RUBRIC = (
    "Which response serves the user better: does it do what was asked, correctly and "
    "completely, in clear language, without padding or unrequested material?"
)

ABSOLUTE_RUBRIC = """\
[Does the response do what the user asked, correctly, completely and clearly?]
Score 1: The response ignores the request or is wrong throughout.
Score 2: The response addresses the request but with major errors or large omissions.
Score 3: The response is partly right; it has noticeable errors, gaps or unclear parts.
Score 4: The response is correct and useful, with only minor gaps or unclear wording.
Score 5: The response is correct, complete and clear; nothing important is missing."""

PROMETHEUS_RELATIVE = """\
###Task Description:
Below are an instruction, two responses to it (Response A and Response B), a score rubric{% if reference %} and a reference answer that would earn full marks{% endif %}.
1. Write feedback that compares the two responses strictly by the rubric, not by general impressions.
2. Say concretely what one response does better or worse than the other.
3. Finish with a verdict line naming the better response, written exactly as "[RESULT] A" or "[RESULT] B".
4. Write nothing except the feedback and the verdict line.

###Instruction:
{{ instruction }}

###Response A:
{{ response_a }}

###Response B:
{{ response_b }}

{% if reference %}
###Reference Answer:
{{ reference }}

{% endif %}
###Score Rubric:
{{ rubric }}

###Feedback:"""

PROMETHEUS_ABSOLUTE = """\
###Task Description:
Below are an instruction, one response to it, a score rubric{% if reference %} and a reference answer that would score 5{% endif %}.
1. Write feedback that assesses the response strictly by the rubric, not by general impressions.
2. Decide on an integer score from 1 to 5 using the rubric's descriptions.
3. Finish with a line written exactly as "[RESULT] N", where N is that integer from 1 to 5.
4. Write nothing except the feedback and the result line.

###Instruction to evaluate:
{{ instruction }}

###Response to evaluate:
{{ response }}

{% if reference %}
###Reference Answer (Score 5):
{{ reference }}

{% endif %}
###Score Rubrics:
{{ rubric }}

###Feedback:"""

MT_BENCH_SYSTEM = (
    "You are a fair and careful judge. Two AI assistants have answered the same user "
    "question; decide which answer is better. Consider how well each one follows the "
    "question and how helpful, relevant, accurate, deep and detailed it is. The order in "
    "which the answers appear, their length and the assistants' names must not sway you. "
    "Start with a short comparison explaining your reasoning, then give your final verdict "
    'in exactly this form: "[[A]]" if assistant A is better, "[[B]]" if assistant B is '
    'better, "[[C]]" if they are equally good.'
)

MT_BENCH_PAIR = """\
[User Question]
{{ instruction }}

{% if reference %}
[The Start of Reference Answer]
{{ reference }}
[The End of Reference Answer]

{% endif %}
[The Start of Assistant A's Answer]
{{ response_a }}
[The End of Assistant A's Answer]

[The Start of Assistant B's Answer]
{{ response_b }}
[The End of Assistant B's Answer]"""

# Prometheus models also write "[RESULT] (A)" or "[RESULT] Response A"; accept both.
RESULT_AB = r"\[RESULT\]\s*:?\s*\(?\s*(?:Response\s+)?(?P<verdict>[AB])\b\)?"
RESULT_SCORE = r"\[RESULT\]\s*:?\s*\(?\s*(?P<verdict>[1-5])\b(?!\.\d)\)?"
DOUBLE_BRACKET = r"\[\[(?P<verdict>[ABC])\]\]"
# Arena-Hard-Auto's graded verdicts (Li et al. 2024): A>>B and B>>A are strong, A>B and B>A weak.
GRADED = r"\[\[(?P<verdict>A>>B|A>B|A=B|B>A|B>>A)\]\]"
ARENA_HARD_GRADES = {"A>>B": ("A", 2), "A>B": ("A", 1), "A=B": ("C", 0), "B>A": ("B", 1), "B>>A": ("B", 2)}

ARENA_HARD_SYSTEM = (
    "You are an impartial judge of two AI assistants' answers to the same user prompt. First write your own "
    "answer to the prompt. Then compare both assistants' answers with yours: point out mistakes and inaccurate "
    "information, and say how helpful, relevant and concise each one is and what important information it "
    "leaves out. Do not let the order of the answers or their length sway you. End with your final verdict, "
    'exactly one of: "[[A>>B]]" (A is significantly better), "[[A>B]]" (A is slightly better), "[[A=B]]" '
    '(a tie, about the same), "[[B>A]]" (B is slightly better), "[[B>>A]]" (B is significantly better).'
)

ARENA_HARD_PAIR = """\
<|User Prompt|>
{{ instruction }}

{% if reference %}
<|Reference Answer|>
{{ reference }}

{% endif %}
<|The Start of Assistant A's Answer|>
{{ response_a }}
<|The End of Assistant A's Answer|>

<|The Start of Assistant B's Answer|>
{{ response_b }}
<|The End of Assistant B's Answer|>"""

BUILTIN: dict[str, JudgeTemplate] = {
    t.name: t
    for t in (
        JudgeTemplate("prometheus-relative", PAIRWISE, PROMETHEUS_RELATIVE, RESULT_AB, system=PROMETHEUS_SYSTEM,
                      logprob_prefix="[RESULT] ", rubric=GENERAL_RUBRIC),
        JudgeTemplate("prometheus-absolute", ABSOLUTE, PROMETHEUS_ABSOLUTE, RESULT_SCORE, system=PROMETHEUS_SYSTEM,
                      logprob_prefix="[RESULT] ", rubric=ABSOLUTE_RUBRIC),
        JudgeTemplate("mt-bench-pair", PAIRWISE, MT_BENCH_PAIR, DOUBLE_BRACKET, system=MT_BENCH_SYSTEM,
                      tie="C", logprob_prefix="[["),
        # Graded labels span several tokens, so this template is for generate mode only.
        JudgeTemplate("arena-hard-pair", PAIRWISE, ARENA_HARD_PAIR, GRADED, system=ARENA_HARD_SYSTEM, tie="C",
                      grades=ARENA_HARD_GRADES),
    )
}

_KEYS = {"verdict", "kind", "tie", "logprob_prefix", "system", "rubric", "grades"}
_HEADER = re.compile(r"\A\s*\{#(?P<body>.*?)#\}\n?", re.DOTALL)


def load_template_file(path: str | Path) -> JudgeTemplate:
    """A user template: jinja2 text whose leading ``{# ... #}`` comment declares its verdict."""
    from pairlab.files import read_text  # the one reader rule: a FIFO, a device, bad UTF-8 refused by name
    from pairlab.records import RecordError

    path = Path(path)
    try:
        text = read_text(path, limit=MAX_TEMPLATE_BYTES)
    except RecordError as exc:
        raise TemplateError(str(exc)) from None
    match = _HEADER.match(text)
    if not match:
        raise TemplateError(f"{path}: a template file must start with a {{# verdict: REGEX #}} comment")
    decl: dict[str, str] = {}
    for lineno, line in enumerate(match.group("body").splitlines(), start=1):
        if not line.strip():
            continue
        key, sep, value = line.strip().partition(":")
        key = key.strip()
        if not sep or key not in _KEYS:
            raise TemplateError(f"{path}: header line {lineno}: expected 'key: value' with key in "
                                f"{', '.join(sorted(_KEYS))}, got {line.strip()!r}")
        value = value.strip()
        if value.startswith('"') or (key == "grades" and value.startswith("{")):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise TemplateError(f"{path}: header line {lineno}: bad quoted value: {exc.msg}") from None
        decl[key] = value
    if "verdict" not in decl:
        raise TemplateError(f"{path}: the header must declare 'verdict: REGEX' with a (?P<verdict>...) group")
    # Blank lines in place of the header keep jinja's error line numbers those of the file.
    body = "\n" * text[:match.end()].count("\n") + text[match.end():]
    try:
        template = JudgeTemplate(
            name=path.name, kind=decl.get("kind", PAIRWISE), user=body, verdict=decl["verdict"],
            system=decl.get("system", ""), tie=decl.get("tie"), logprob_prefix=decl.get("logprob_prefix"),
            rubric=decl.get("rubric", ""), source=str(path),
            grades={k: tuple(v) if isinstance(v, list) else v for k, v in decl["grades"].items()}
            if isinstance(decl.get("grades"), dict) else decl.get("grades"),
        )
        _trial_render(template)
    except TemplateError as exc:
        raise TemplateError(f"{path}: {str(exc).removeprefix(path.name + ': ')}") from None
    return template


def _trial_render(template: JudgeTemplate, timeout_s: float = LOAD_TIMEOUT_S) -> None:
    """Render once on sample texts, within ``timeout_s``: a template that fails or loops
    even on short texts is refused at load, not found out pair by pair. (Short texts
    cannot show everything, so every later render is bounded as well.)"""
    try:
        with _bounded_render(timeout_s):
            template.messages("Sample question?", "Sample answer one.", "Sample answer two.", "Sample reference.")
    except TemplateError:
        raise
    except Exception as exc:
        raise TemplateError(f"rendering failed: {exc}") from None


def get_template(name_or_path: str) -> JudgeTemplate:
    """A built-in template by name, or a user template file by path."""
    if name_or_path in BUILTIN:
        return BUILTIN[name_or_path]
    path = Path(name_or_path)
    if path.is_file():
        return load_template_file(path)
    raise TemplateError(
        f"unknown template {name_or_path!r}: use one of {', '.join(BUILTIN)} or the path of a jinja2 template file"
    )
