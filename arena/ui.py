"""The Gradio pages. Handlers only translate clicks into :class:`~arena.battles.Arena` calls.

Three separate pages (separate Gradio apps), so that the anonymous one never ships a
model id to the browser: Gradio sends every component's initial props (dropdown
choices, table values) in its config, so anything naming models lives elsewhere.

* ``/``              battle (anonymous) and prompt-set tabs
* ``/side-by-side``  named mode: the voter picks both models (not rated by default)
* ``/leaderboard``   ratings from the stored votes

Per-session state (the current battle) stays on the server, keyed by the signed session
cookie (:mod:`arena.sessions`) and Gradio's session hash (one page); nothing
battle-related lives in ``gr.State`` or in the page. Errors other than refusals show a
generic message: their text goes to the log (it may name the models).
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass

import gradio as gr
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from arena.api import GENERIC_ERROR, request_voter
from arena.battles import Arena, Battle
from arena.errors import Refused, UnknownBattle
from arena.listeners import Listeners
from arena.sessions import Voter
from arena.slots import Slot
from pairlab.records import Record

log = logging.getLogger(__name__)

SIDE_BY_SIDE_PATH = "/side-by-side"
LEADERBOARD_PATH = "/leaderboard"

# The chat panes' "Clear" button would wipe the page's copy of a battle the server still holds.
CSS = """
.arena-chat button[aria-label="Clear"] { display: none; }
.arena-name { min-height: 2.2em; font-size: 1.05em; }
.arena-name p { margin: 0; }
#status, #ps-status { min-height: 1.6em; }
.vote-row button { font-size: 1.05em; }
/* A phone's width: the ratings tables' long model names wrap, so the rating stays on screen. */
@media (max-width: 480px) {
  #ratings table, #campaign-ratings table { font-size: 0.85em; }
  #ratings th, #ratings td, #campaign-ratings th, #campaign-ratings td { padding: 4px 5px; }
  #ratings th, #ratings th *, #campaign-ratings th, #campaign-ratings th * {
    word-break: normal; overflow-wrap: normal; white-space: normal; }
  #ratings td, #campaign-ratings td { overflow-wrap: anywhere; }
}
"""

# Plain text: emoji glyphs are missing from many systems' fonts (Debian's Chromium here).
VOTE_LABELS = {"a": "← A is better", "tie": "Tie", "bothbad": "Both are bad", "b": "B is better →"}


NAV = [("/", "Arena (anonymous)"), (SIDE_BY_SIDE_PATH + "/", "Side by side (named)"),
       (LEADERBOARD_PATH + "/", "Leaderboard")]


def _nav(here: str) -> gr.HTML:
    """Plain links that open in the same tab (Gradio's Markdown opens links in a new one)."""
    items = [f"<strong>{label}</strong>" if path.rstrip("/") == here.rstrip("/")
             else f'<a href="{path}" target="_self" class="arena-nav-link">{label}</a>' for path, label in NAV]
    return gr.HTML(" · ".join(items), elem_id="nav", padding=False)


# An HTML tag start, and Markdown's image syntax: what would make the browser build a form
# or fetch a remote address from a model's (or a voter's) text.
_TAG = re.compile(r"<(?=[A-Za-z/!?])")
_IMAGE = re.compile(r"!(?=\[)")


def safe_text(text: str) -> str:
    """Text for a chat pane, shown but never obeyed: no HTML element (``<form>``,
    ``<img>``...) and no Markdown image. A zero-width space after ``<`` and ``!`` keeps
    the text as written while breaking the syntax; links stay, and only a click follows one."""
    return _IMAGE.sub("!\u200b", _TAG.sub("<\u200b", text))


def _chat(battle: Battle, side: str, live: str | None = None) -> list[dict]:
    """One pane's conversation; ``live`` replaces the last answer while it streams."""
    out = []
    for turn in battle.turns:
        answer = turn.response_a if side == "a" else turn.response_b
        if turn is battle.turns[-1] and live is not None:
            answer = live
        out += [{"role": "user", "content": safe_text(turn.prompt)},
                {"role": "assistant", "content": safe_text(answer)}]
    return out


def _voter(arena: Arena, request: gr.Request) -> Voter:
    """The page's voter: the signed session cookie (never Gradio's client-chosen session
    hash, which only tells the page's tabs apart)."""
    try:
        return request_voter(arena, request, tab=request.session_hash or "")
    except UnknownBattle:
        raise Refused("Your session is missing or has expired: reload the page.") from None


def _guarded(status: gr.Markdown):
    """Show any error other than a refusal as a generic message, with the details in the log."""
    def wrap(handler):
        @functools.wraps(handler)
        def plain(*args, **kwargs):
            try:
                return handler(*args, **kwargs)
            except Exception:
                log.exception("%s failed", handler.__name__)
                return {status: _error(GENERIC_ERROR)}

        @functools.wraps(handler)
        def streaming(*args, **kwargs):
            try:
                yield from handler(*args, **kwargs)
            except Exception:
                log.exception("%s failed", handler.__name__)
                yield {status: _error(GENERIC_ERROR)}

        @functools.wraps(handler)
        async def streaming_async(*args, **kwargs):
            try:
                async for update in handler(*args, **kwargs):
                    yield update
            except Exception:
                log.exception("%s failed", handler.__name__)
                yield {status: _error(GENERIC_ERROR)}

        if inspect.isasyncgenfunction(handler):
            return streaming_async
        return streaming if inspect.isgeneratorfunction(handler) else plain
    return wrap


def _stored(record: Record, then: str) -> str:
    chosen = {"model_a": "A is better", "model_b": "B is better", "tie": "Tie", "tie (bothbad)": "Both are bad"}
    note = " A prompt or an answer named a model, so this vote is kept but not rated." if record.meta["identity_leak"] else ""
    if record.meta.get("flags"):
        note += " " + HYGIENE_NOTES[record.meta["flags"][0]]
    return f"Vote stored: *{chosen[record.winner]}*.{note} {then}"


HYGIENE_NOTES = {
    "daily_cap": "You reached today's limit of counted votes, so this vote is kept but not rated.",
    "duplicate_prompt": "This prompt already has many votes, so this vote is kept but not rated.",
    "address_cap": "Your network address reached today's limit of counted votes, so this vote is kept but not "
                   "rated.",
    "address_burst": "Many voters voted from your network address just now, so this vote is kept but not rated.",
}


def _error(exc: Exception) -> str:
    return f"**Not done:** {exc}"


@dataclass
class Panel:
    """The components of one two-pane voting area (ids are stable, for tests and scripts)."""

    chat_a: gr.Chatbot
    chat_b: gr.Chatbot
    name_a: gr.Markdown
    name_b: gr.Markdown
    votes: dict[str, gr.Button]
    status: gr.Markdown

    def locked(self, votable: bool) -> dict:
        return {button: gr.update(interactive=votable) for button in self.votes.values()}

    def reveal(self, model_a: str, model_b: str) -> dict:
        return {self.name_a: f"Model A: **{model_a}**", self.name_b: f"Model B: **{model_b}**"}

    def cleared(self) -> dict:
        return {self.chat_a: [], self.chat_b: [], self.name_a: "", self.name_b: "", **self.locked(False)}


def _panel(prefix: str = "", labels: tuple[str, str] = ("Model A", "Model B")) -> Panel:
    with gr.Row(equal_height=True):
        with gr.Column():
            chat_a = gr.Chatbot(label=labels[0], elem_id=f"{prefix}response-a", height=420,
                                feedback_options=None, buttons=["copy"], elem_classes="arena-chat")
            name_a = gr.Markdown(elem_id=f"{prefix}name-a", elem_classes="arena-name")
        with gr.Column():
            chat_b = gr.Chatbot(label=labels[1], elem_id=f"{prefix}response-b", height=420,
                                feedback_options=None, buttons=["copy"], elem_classes="arena-chat")
            name_b = gr.Markdown(elem_id=f"{prefix}name-b", elem_classes="arena-name")
    with gr.Row(elem_classes="vote-row"):
        votes = {choice: gr.Button(label, elem_id=f"{prefix}vote-{choice}", interactive=False,
                                   variant="secondary")
                 for choice, label in VOTE_LABELS.items()}
    status = gr.Markdown(elem_id=f"{prefix}status")
    return Panel(chat_a, chat_b, name_a, name_b, votes, status)


def _vote_handler(arena: Arena, panel: Panel, mode: str, no_battle: str, then: str, after: dict | None = None):
    """Vote buttons of every page: vote on the session's current battle, then reveal the names."""
    def on_vote(choice: str):
        @_guarded(panel.status)
        def handler(request: gr.Request) -> dict:
            try:
                voter = _voter(arena, request)
                battle = arena.current(voter, mode)
                if battle is None:
                    raise Refused(no_battle)
                record = arena.vote(voter, battle.id, choice)
                arena.limits.voting.mark(voter.token)
            except Refused as exc:
                return {panel.status: _error(exc)}
            return {**panel.reveal(record.model_a, record.model_b), **panel.locked(False),
                    panel.status: _stored(record, then), **(after or {})}
        return handler
    return on_vote


def _conversation(arena: Arena, mode: str, named: bool, listeners: Listeners) -> None:
    """A live battle (anonymous or named): prompt, streamed answers, votes, controls.

    Built inside the caller's Blocks context. Generation runs only while the page listens
    to its event stream (``listeners``): an event posted by a client that never reads it,
    or that left, starts no models and stops them.
    """
    pickers = []
    if named:
        choices = sorted(arena.models)
        with gr.Row():
            pickers = [gr.Dropdown(choices, value=choices[i % len(choices)] if choices else None,
                                   label=f"Model {side}", elem_id=f"model-{side.lower()}-select")
                       for i, side in enumerate("AB")]
    panel = _panel()
    with gr.Row():
        prompt = gr.Textbox(placeholder="Type a prompt and press Enter", show_label=False, scale=8,
                            elem_id="prompt", max_lines=8, autofocus=True,
                            max_length=arena.config.max_prompt_chars + 1)
        send = gr.Button("Send", variant="primary", elem_id="send", scale=1, min_width=90)
    with gr.Row():
        draw = gr.Button("Draw a prompt", elem_id="draw-prompt", size="sm", visible=bool(arena.prompts))
        regenerate = gr.Button("Regenerate", elem_id="regenerate", size="sm", interactive=False)
        new_round = gr.Button("New round", elem_id="new-round", size="sm")
    max_turns = arena.config.max_turns

    outputs = [panel.chat_a, panel.chat_b, panel.name_a, panel.name_b, *panel.votes.values(),
               panel.status, prompt, send, regenerate]

    async def run(request: gr.Request, begin) -> AsyncIterator[dict]:
        """Wait for a generation slot (holding no thread), then ``begin(voter)`` the turn and stream it."""
        page = request.session_hash
        if not await listeners.arrive(page):
            return  # nobody reads this event's output: nothing to generate, nobody to tell
        slot = None
        try:
            voter = _voter(arena, request)
            async with aclosing(arena.slots.line_up(voter.token, voter.address,
                                                    gone=lambda: listeners.gone(page))) as line:
                async for step in line:
                    if isinstance(step, Slot):
                        slot = step
                        break
                    yield {panel.status: f"You are {step} in line: the models answer when a place frees up…"}
        except Refused as exc:
            yield {panel.status: _error(exc)}
            return
        stream = None
        try:
            try:
                battle = await run_in_threadpool(begin, voter)
            except Refused as exc:
                yield {panel.status: _error(exc)}
                return
            arena.limits.voting.mark(voter.token)  # a battle in progress: its page goes first
            turn_no = len(battle.turns)
            yield {panel.chat_a: _chat(battle, "a", ""), panel.chat_b: _chat(battle, "b", ""),
                   panel.status: f"Turn {turn_no} of {max_turns}: both models are answering…",
                   prompt: "", send: gr.update(interactive=False), regenerate: gr.update(interactive=False),
                   **panel.locked(False)}
            stream = arena.stream(battle, slot)
            try:
                async for text_a, text_b in iterate_in_threadpool(stream):
                    if not listeners.listening(page):
                        return  # the page left: closing the stream below stops the models
                    yield {panel.chat_a: _chat(battle, "a", text_a), panel.chat_b: _chat(battle, "b", text_b)}
            except Refused as exc:
                yield {panel.status: _error(exc), send: gr.update(interactive=True)}
                return
        finally:
            if stream is not None:
                stream.close()  # a page that left mid-stream stops its models (the battle fails)
            arena.slots.release(slot)  # a no-op once the stream gave it back
        more = "ask a follow-up, " if turn_no < max_turns else ""
        yield {panel.status: f"Turn {turn_no} of {max_turns} done. Vote, {more}or regenerate.",
               send: gr.update(interactive=turn_no < max_turns), regenerate: gr.update(interactive=True),
               **panel.locked(True)}

    def send_turn(text: str, picked: tuple[str, ...], request: gr.Request) -> AsyncIterator[dict]:
        def begin(session: Voter) -> Battle:
            battle = arena.current(session, mode)
            if battle is None or battle.voted or battle.state == "failed" or \
                    (picked and tuple(picked) != battle.models):
                return arena.start(session, text, models=picked or None)
            return arena.follow_up(session, battle, text)
        return run(request, begin)

    @_guarded(panel.status)
    async def on_regenerate(request: gr.Request) -> AsyncIterator[dict]:
        def begin(voter: Voter) -> Battle:
            battle = arena.current(voter, mode)
            if battle is None:
                raise Refused("Nothing to regenerate yet: send a prompt.")
            return arena.regenerate(voter, battle)
        async for update in run(request, begin):
            yield update

    on_vote = _vote_handler(arena, panel, mode, "There is no battle to vote on: send a prompt first.",
                            "Press **New round** for the next battle.",
                            {send: gr.update(interactive=False), regenerate: gr.update(interactive=False)})

    @_guarded(panel.status)
    def on_new_round(request: gr.Request) -> dict:
        try:
            arena.forget(_voter(arena, request), modes=(mode,))
        except Refused as exc:
            return {panel.status: _error(exc)}
        return {**panel.cleared(), panel.status: "", prompt: "", send: gr.update(interactive=True),
                regenerate: gr.update(interactive=False)}

    @_guarded(panel.status)
    def on_draw(request: gr.Request) -> dict:
        try:
            return {prompt: arena.draw_prompt(_voter(arena, request)).prompt}
        except Refused as exc:
            return {panel.status: _error(exc)}

    # Generation events start at once and wait for a slot in arena.slots (bounded per
    # address and session, no thread held), never in Gradio's queue, where they would
    # crowd out votes and page loads.
    generation = {"concurrency_limit": None, "show_progress": "hidden"}
    # Gradio finds the request by annotation, so each mode gets an explicit signature.
    if named:
        @_guarded(panel.status)
        async def on_send(text: str, model_a: str, model_b: str, request: gr.Request) -> AsyncIterator[dict]:
            async for update in send_turn(text, (model_a, model_b), request):
                yield update
    else:
        @_guarded(panel.status)
        async def on_send(text: str, request: gr.Request) -> AsyncIterator[dict]:
            async for update in send_turn(text, (), request):
                yield update
    for trigger in (send.click, prompt.submit):
        trigger(on_send, [prompt, *pickers], outputs, **generation)
    regenerate.click(on_regenerate, None, outputs, **generation)
    for choice, button in panel.votes.items():
        button.click(on_vote(choice), None, outputs, concurrency_limit=None)
    new_round.click(on_new_round, None, outputs, concurrency_limit=None)
    draw.click(on_draw, None, [prompt, panel.status], concurrency_limit=None)


def _prompt_set(arena: Arena, tab: gr.Tab) -> None:
    """The prompt-set tab's content; opening ``tab`` shows a pair at once (no empty tab)."""
    if not arena.pairs:
        gr.Markdown("No prompt set with pre-generated answers is configured (`pairs` in the arena config).")
        return
    counted = ("A closed panel on private pairs: only a logged-in voter's first vote on each pair counts on "
               "the leaderboard."
               if arena.config.prompt_set_rated
               else "These votes are stored for analysis but not counted on the leaderboard: the answers are "
                    "fixed texts, so once names are revealed a pair is no longer blind.")
    gr.Markdown("Vote on a fixed, curated set of prompts with pre-generated answers: the same pairs "
                f"the LLM judges see. Models stay anonymous until you vote. {counted}")
    question = gr.Markdown(elem_id="ps-prompt")
    panel = _panel(prefix="ps-")
    following = gr.Button("Next pair", variant="primary", elem_id="ps-next")
    outputs = [question, panel.chat_a, panel.chat_b, panel.name_a, panel.name_b, *panel.votes.values(),
               panel.status]

    @_guarded(panel.status)
    def on_next(request: gr.Request) -> dict:
        try:
            voter = _voter(arena, request)
            battle = arena.serve_pair(voter)
        except Refused as exc:
            return {panel.status: _error(exc)}
        arena.limits.voting.mark(voter.token)
        turn = battle.turns[-1]
        return {**panel.cleared(), question: f"**Prompt:** {safe_text(turn.prompt)}",
                panel.chat_a: [{"role": "assistant", "content": safe_text(turn.response_a)}],
                panel.chat_b: [{"role": "assistant", "content": safe_text(turn.response_b)}],
                **panel.locked(True), panel.status: "Which answer is better?"}

    on_vote = _vote_handler(arena, panel, "prompt_set", "Press Next pair first.", "Press **Next pair**.")

    @_guarded(panel.status)
    def on_open(shown: str, request: gr.Request) -> dict:
        return {question: gr.update()} if shown else on_next(request)  # back on the tab: the pair stays

    following.click(on_next, None, outputs, concurrency_limit=None)
    tab.select(on_open, question, outputs, concurrency_limit=None)
    for choice, button in panel.votes.items():
        button.click(on_vote(choice), None, outputs, concurrency_limit=None)


def _forgetter(arena: Arena):
    def forget(request: gr.Request) -> None:
        try:
            arena.forget(_voter(arena, request), grace=True)
        except Refused:  # no session, so no battle to forget
            pass
    return forget


def battle_page(arena: Arena, listeners: Listeners) -> gr.Blocks:
    with gr.Blocks(title="Pairwise Arena", analytics_enabled=False) as page:
        gr.Markdown("# Pairwise Arena")
        _nav("/")
        with gr.Tab("Battle", elem_id="tab-battle"):
            gr.Markdown("Two anonymous models answer your prompt side by side. Vote for the better "
                        "answer; their names are revealed after you vote. A vote on answers in which a "
                        "model names itself is kept but left out of the leaderboard.")
            _conversation(arena, "battle", named=False, listeners=listeners)
        with gr.Tab("Prompt set", elem_id="tab-prompt-set") as prompt_set:
            _prompt_set(arena, prompt_set)
        page.unload(_forgetter(arena))
    return page


def side_by_side_page(arena: Arena, listeners: Listeners) -> gr.Blocks:
    with gr.Blocks(title="Pairwise Arena: side by side", analytics_enabled=False) as page:
        gr.Markdown("# Side by side")
        _nav(SIDE_BY_SIDE_PATH)
        gr.Markdown("Pick two models and compare them on your prompt. These votes are stored as "
                    "named (not blind) and are left out of the leaderboard by default.")
        _conversation(arena, "side_by_side", named=True, listeners=listeners)
        page.unload(_forgetter(arena))
    return page


def _heatmap(win_rates):
    """The win-fraction matrix coloured red (loses) to green (wins), as FastChat's monitor shows it."""
    # The model column stays a column: Gradio drops a Styler's index, and with it the row names.
    from arena.leaderboard import shown_rates

    win_rates = shown_rates(win_rates)
    cells = [c for c in win_rates.columns if c != "model"]
    return (win_rates.style.background_gradient(cmap="RdYlGn", vmin=0, vmax=1, axis=None, subset=cells)
            .highlight_null(props="background-color: transparent; color: inherit", subset=cells)
            .format("{:.2f}", na_rep="", subset=cells))


RATINGS_CAPTION = ("Ratings on the Elo scale. Rank (UB): 1 + the number of models surely better (their whole range "
                   "lies above this one's).")
STYLE_CAPTION = " Style-controlled: the rating with answer length and formatting held equal."


CAMPAIGN_CAPTION = ("The labelling campaign's votes, with and without {judge}'s verdicts (Elo scale). Rank (UB) "
                    "from the people + {judge} ranges; below {min_units} pairs voted on, no ranges or ranks.")


def _ratings_caption(ratings) -> str:
    """The ratings table's caption: it explains the style-controlled column only when the table has it."""
    return RATINGS_CAPTION + (STYLE_CAPTION if "style-controlled" in ratings.columns else "")


def leaderboard_page(arena: Arena) -> gr.Blocks:
    from arena.categories import LONG_PROMPT_CHARS, MIN_LANGUAGE_VOTES, views
    from analysis.ratings.table import MIN_UNITS
    from arena.leaderboard import campaign, compute

    with gr.Blocks(title="Pairwise Arena: leaderboard", analytics_enabled=False) as page:
        gr.Markdown("# Leaderboard")
        _nav(LEADERBOARD_PATH)
        with gr.Row():
            category = gr.Dropdown(
                [("all votes", "all")], value="all", label="View", elem_id="category", scale=3,
                info="Views appear as votes come in: multi-turn battles, long prompts (at least "
                     f"{LONG_PROMPT_CHARS} characters) and code each once a counted vote is in them; a language "
                     f"once {MIN_LANGUAGE_VOTES} counted votes are in it.")
            refresh = gr.Button("Refresh", elem_id="refresh", size="sm", scale=1)
        summary = gr.Markdown(elem_id="leaderboard-summary")
        ratings = gr.Dataframe(label=RATINGS_CAPTION, elem_id="ratings", interactive=False, wrap=True)
        campaign_outputs = []
        if arena.verdicts is not None:  # a labelling campaign with its judge's verdicts
            campaign_outputs = [gr.Markdown(elem_id="campaign-summary"),
                                gr.Dataframe(label=CAMPAIGN_CAPTION.format(judge=arena.verdicts.judge,
                                                                             min_units=MIN_UNITS),
                                             elem_id="campaign-ratings", interactive=False, wrap=True)]
        models = gr.Dataframe(label="Votes per model", elem_id="model-counts", interactive=False)
        with gr.Row():
            win_rates = gr.Dataframe(label="How often the row model beat the column model (a tie counts ½)", elem_id="win-rates",
                                     interactive=False)
            counts = gr.Dataframe(label="Battles per pair", elem_id="battle-counts", interactive=False)

        def on_refresh(view: str) -> tuple:
            board = compute(arena.store, bootstrap=arena.config.bootstrap, category=view or "all",
                            anomaly_alpha=arena.config.anomaly_alpha)
            choices = [(label, key) for key, label in views(arena.store.records(ratable=True)).items()]
            shown = (gr.update(choices=choices), board.summary,
                     gr.update(value=board.ratings, label=_ratings_caption(board.ratings)), board.models,
                     _heatmap(board.win_rates), board.counts)
            if not campaign_outputs:
                return shown
            labelled = campaign(arena.store, arena.verdicts, arena.strategy, len(arena.inclusion))
            return (*shown, labelled.summary, labelled.ratings)

        outputs = [category, summary, ratings, models, win_rates, counts, *campaign_outputs]
        for trigger in (refresh.click, category.input):
            trigger(on_refresh, category, outputs, concurrency_limit=1)
        page.load(on_refresh, category, outputs, concurrency_limit=1)
    return page
