"""The class votes from phones: the presenter's room panel (link, QR code, live count, tally, close, CSV) and the
phone's vote screen (``?room=CODE``: the current question and its choices, nothing else).

The votes live in the run store's database (``pe_core.votes``), so every app process behind the proxy sees the
same room. The phone's screen polls the room with a fragment (``st.fragment(run_every=...)``): it follows the
presenter's step without reloading the page, and imports neither torch nor the lessons.
"""

from __future__ import annotations

import io
import logging
import socket
from urllib.parse import urlencode, urlsplit

import streamlit as st

from i18n import LANGUAGES, _, current_language, use_language
from pe_core import votes as store_votes

log = logging.getLogger(__name__)

ROOM_KEY = "room"  # the phone's link: /vote?room=CODE
VOTER_KEY = "me"  # the phone's anonymous id, kept in its link so a reload keeps its vote
PRESENTER_KEY = "vote"  # the presenter's room, kept in the projector's link (/tour?present=1&vote=CODE)
PHONE_PAGE = "vote"
PUBLIC_URL_ENV = "PE_PUBLIC_URL"  # the address phones use to reach this server, where the browser's is not it
PHONE_REFRESH_S = 1.0  # how often a phone asks which step the presenter is on
COUNT_REFRESH_S = 0.5  # how often the presenter's count of votes is read
QR_PX = 170  # the QR code on the presenter's screen at 1280 × 720 (version 3-4 for a LAN link: 5 px a module)
# ... and larger on a larger screen (22 % of its height: 238 px at 1920 × 1080), its modules kept sharp
ROOM_CSS = """<style>
.st-key-vote_room_panel [data-testid="stElementContainer"]:has([data-testid="stImage"]),
.st-key-vote_room_panel [data-testid="stFullScreenFrame"]:has([data-testid="stImage"]),
.st-key-vote_room_panel [data-testid="stImage"], .st-key-vote_room_panel [data-testid="stImageContainer"],
.st-key-vote_room_panel img { width: clamp(150px, 22vh, 320px) !important; flex: 0 0 auto !important;
  max-width: none !important; }
.st-key-vote_room_panel img { height: auto; image-rendering: pixelated; }
</style>"""
ROOM_STATE = "vote_room_code"
_SYNCED = "vote_room_synced"  # (code, step index) last sent to the store
_REVEALED = "vote_room_revealed"  # (code, step index) whose reveal was sent
_NOTE = "vote_phone_note"  # the phone's last refusal, shown once
_LOOPBACK = {"localhost", "127.0.0.1", "::1", "0.0.0.0", ""}
PHONE_CSS = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"],
[data-testid="stHeader"] { display: none !important; }
[data-testid="stMainBlockContainer"] { max-width: 40rem; padding: 1rem 1rem 2rem 1rem; }
[data-testid="stMain"] button { min-height: 3.2rem; }
[data-testid="stMain"] button p { font-size: 1.15rem; }
</style>"""


def votes() -> store_votes.VoteStore:
    return store_votes.server_votes()


# ---- the presenter ------------------------------------------------------------------------------------------


def _lan_address() -> str | None:
    """This machine's address on its network (the interface a packet out would leave by; nothing is sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))
            address = probe.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


def listens_locally() -> bool:
    """Whether this server answers this computer only (Streamlit's ``server.address`` is a loopback address)."""
    address = (st.get_option("server.address") or "").strip()
    return address in {"localhost", "127.0.0.1", "::1"}


def phone_link(code: str) -> str:
    """The address a phone opens: ``PE_PUBLIC_URL`` if set, else the presenter's own address, with this machine's
    network address in place of ``localhost``."""
    import os

    public = os.environ.get(PUBLIC_URL_ENV, "").strip().rstrip("/")
    if not public:
        url = urlsplit(st.context.url or "http://localhost:8501/")
        host, port = url.hostname or "", url.port
        if host in _LOOPBACK:
            host = _lan_address() or host or "localhost"
        netloc = f"[{host}]" if ":" in host else host
        public = f"{url.scheme or 'http'}://{netloc}" + (f":{port}" if port else "")
    return f"{public}/{PHONE_PAGE}?{urlencode({ROOM_KEY: code})}"


def qr_png(link: str) -> bytes:
    """The link as a QR code (segno), black on white with its quiet zone, as PNG."""
    import segno

    buffer = io.BytesIO()
    segno.make(link, error="m").save(buffer, kind="png", scale=8, border=2)
    return buffer.getvalue()


def room_code() -> str | None:
    """The presenter's room: this session's, else the one its link names (``?vote=CODE``: a reloaded projector
    keeps its room, and the phones theirs)."""
    code = st.session_state.get(ROOM_STATE)
    if code is None:
        linked = store_votes.normal_code(st.query_params.get(PRESENTER_KEY))
        if store_votes.valid_code(linked):
            st.session_state[ROOM_STATE] = code = linked
    return code


def _open_room() -> None:
    code = votes().open_room()
    st.session_state[ROOM_STATE] = code
    st.query_params[PRESENTER_KEY] = code
    st.session_state.pop(_SYNCED, None)
    st.session_state.pop(_REVEALED, None)


def _close_room() -> None:
    code = room_code()
    if code:
        votes().close_room(code)


def _forget_room() -> None:
    st.session_state.pop(ROOM_STATE, None)
    if PRESENTER_KEY in st.query_params:
        del st.query_params[PRESENTER_KEY]


def step_texts(step) -> dict[str, dict]:
    """The step's title, question, choices and answer in every language the app has (for the phones)."""
    from lessons import tour

    texts = {}
    for language in LANGUAGES:
        with use_language(language):
            text = tour.step_text(step)
        texts[language] = {"title": text.title, "question": text.question, "choices": list(text.choices),
                           "answer": text.answer}
    return texts


def follow(step, index: int, shown: bool) -> None:
    """Tell the room which step the presenter is on, and that its answer is shown; only when that changed."""
    code = room_code()
    if not code:
        return
    room = votes().room(code)
    if room is None or not room.open:
        return
    if st.session_state.get(_SYNCED) != (code, index) or room.step != index:
        votes().show_step(code, index, choices=len(step.choices), answer=step.answer, texts=step_texts(step))
        st.session_state[_SYNCED] = (code, index)
    if shown and st.session_state.get(_REVEALED) != (code, index):
        votes().reveal(code, index)
        st.session_state[_REVEALED] = (code, index)


def room_panel(step, index: int, shown: bool) -> None:
    """On the presenter's question screen: "Open a room", or the room's link, QR code, live count and controls."""
    follow(step, index, shown)
    code = room_code()
    room = votes().room(code) if code else None
    if room is None:
        if code:  # a room this session opened is gone (another database): start again
            _forget_room()
        st.button(_("Open a room: the class votes from phones"), key="vote_open", icon=":material/qr_code_2:",
                  on_click=_open_room, help=_("Shows a link and a QR code; each student votes once per question and "
                                              "may change their vote until you reveal the answer."))
        return
    st.html(ROOM_CSS)
    with st.container(border=True, key="vote_room_panel"):
        if not room.open:
            st.info(_("Room {code} is closed: phones can no longer vote.").format(code=code), icon=":material/lock:")
            controls(code, closed=True)
            return
        link = phone_link(code)
        with st.container(horizontal=True, vertical_alignment="center", gap="medium"):
            st.image(qr_png(link), width=QR_PX)
            with st.container():
                st.markdown(_("Vote at **{link}** · room **{code}**").format(link=link, code=code))
                if listens_locally():
                    st.caption(_("This server answers this computer only: phones cannot reach it. Serve the class "
                                 "with `python -m deploy.serve`, or start Streamlit with `--server.address 0.0.0.0`."))
                with st.container(horizontal=True, vertical_alignment="center"):
                    live_count(code, index, len(step.choices))
                    controls(code, closed=False)


@st.fragment(run_every=COUNT_REFRESH_S)
def live_count(code: str, index: int, choices: int) -> None:
    count = sum(votes().tally(code, index, choices))
    st.markdown(_("**{count}** voted on this question").format(count=count))


def controls(code: str, *, closed: bool) -> None:
    with st.container(horizontal=True, width="content"):
        if closed:
            st.button(_("Open a new room"), key="vote_reopen", on_click=_open_room, icon=":material/qr_code_2:")
        else:
            st.button(_("Close the room"), key="vote_close", on_click=_close_room, icon=":material/lock:")
        st.download_button(_("Votes (CSV)"), votes().export_csv(code), file_name=f"votes-{code}.csv",
                           mime="text/csv", key="vote_csv", icon=":material/download:", on_click="ignore")


def tally_lines(choices: tuple[str, ...] | list[str], counts: tuple[int, ...], answer: int) -> str:
    """One line per choice: its votes and share, the answer ticked (Markdown)."""
    total = sum(counts)
    lines = []
    for index, (choice, count) in enumerate(zip(choices, counts, strict=True)):
        share = f"{100 * count / total:.0f} %" if total else "–"
        mark = "✓ " if index == answer else ""
        lines.append(_("{mark}{choice}: **{count}** ({share})").format(mark=mark, choice=choice, count=count,
                                                                       share=share))
    return "  \n".join(lines)


def room_tally(step, index: int, choices: tuple[str, ...]) -> None:
    """At the reveal, beside the answer: how the room voted (nothing where no room is open)."""
    follow(step, index, shown=True)
    code = room_code()
    if not code or votes().room(code) is None:
        return
    counts = votes().tally(code, index, len(choices))
    with st.container(key="vote_tally"):
        st.markdown(_("The class voted ({count}):").format(count=sum(counts)))
        st.markdown(tally_lines(choices, counts, step.answer))


# ---- the phone ----------------------------------------------------------------------------------------------


def _voter() -> str:
    """The phone's anonymous id: from its link (a reload keeps it), else new."""
    linked = st.query_params.get(VOTER_KEY)
    if linked and store_votes.VOTER_PATTERN.match(linked):
        return linked
    voter = store_votes.new_voter_id()
    st.query_params[VOTER_KEY] = voter
    return voter


def _cast(code: str, step: int, voter: str, choice: int) -> None:
    try:
        votes().cast(code, step, voter, choice)
        st.session_state.pop(_NOTE, None)
    except store_votes.VoteRefused as refusal:
        st.session_state[_NOTE] = refusal.args[0]  # a Deferred: shown in the phone's language


def phone_screen() -> None:
    """The phone's whole page: the room's current question, its choices as large buttons, the student's vote."""
    st.html(PHONE_CSS)
    code = store_votes.normal_code(st.query_params.get(ROOM_KEY))
    if not store_votes.valid_code(code):
        st.error(_("There is no room {room}. Check the code on the screen.").format(room=code or "–"),
                 icon=":material/error:")
        return
    phone_question(code, _voter())


@st.fragment(run_every=PHONE_REFRESH_S)
def phone_question(code: str, voter: str) -> None:
    store = votes()
    room = store.room(code)
    if room is None:
        st.error(_("There is no room {room}. Check the code on the screen.").format(room=code), icon=":material/error:")
        return
    if not room.open:
        st.info(_("Room {room} is closed: the presenter stopped taking votes.").format(room=code),
                icon=":material/lock:")
        return
    question = store.question(code, room.step) if room.step is not None else None
    if question is None:
        st.info(_("Room {room}: waiting for the presenter's first question.").format(room=code),
                icon=":material/hourglass_top:")
        return
    text = question.text(current_language())
    st.caption(_("Room {room} · step {number}").format(room=code, number=question.step + 1))
    st.markdown(f"**{text['title']}**")
    st.markdown(text["question"])
    mine = store.vote_of(code, question.step, voter)
    note = st.session_state.pop(_NOTE, None)
    if note:
        st.warning(_(note), icon=":material/block:")
    if question.revealed:
        counts = store.tally(code, question.step, question.choices)
        if mine is None:
            st.info(_("The answer: **{answer}**").format(answer=text["answer"]), icon=":material/lightbulb:")
        elif mine == question.answer:
            st.success(_("Right: **{answer}**").format(answer=text["answer"]), icon=":material/check_circle:")
        else:
            st.error(_("Not quite: the answer is **{answer}** (you voted {choice})").format(
                answer=text["answer"], choice=text["choices"][mine]), icon=":material/cancel:")
        st.markdown(_("The class voted ({count}):").format(count=sum(counts)))
        st.markdown(tally_lines(text["choices"], counts, question.answer))
        return
    for index, choice in enumerate(text["choices"]):
        st.button(choice, key=f"vote_{question.step}_{index}", on_click=_cast, args=(code, question.step, voter, index),
                  type="primary" if index == mine else "secondary", width="stretch",
                  icon=":material/radio_button_checked:" if index == mine else None)
    if mine is None:
        st.caption(_("Tap your answer."))
    else:
        st.success(_("Your vote: **{choice}**. You can change it until the reveal.").format(
            choice=text["choices"][mine]), icon=":material/how_to_vote:")
