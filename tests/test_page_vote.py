"""AppTests of the class vote: the phone's screen (``app.py?room=CODE``: no sidebar, the current question, a vote
that can change until the reveal, the result after it, refusals as sentences) and the presenter's room panel on
the guided lesson (open, link and QR code, live count, tally at the reveal, close, CSV)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from lessons.tour import available_steps, step_text
from pe_core import votes as V
from tests.visible_text import page_test
from ui import vote as ui_vote

ROOT_APP = str(__import__("pathlib").Path(__file__).resolve().parent.parent / "app.py")
STEPS = available_steps()
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def store(tmp_path, monkeypatch):
    location = str(tmp_path / "runs.sqlite3")
    monkeypatch.setenv(V.STORE_ENV, location)
    yield V.server_votes()
    V._SHARED.pop(location).close()


def phone(query: dict, locale: str = "en-US") -> AppTest:
    at = AppTest.from_file(ROOT_APP, default_timeout=60)
    at.context["locale"] = locale
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def texts(step) -> dict:
    return ui_vote.step_texts(step)


def test_a_phone_refuses_a_malformed_an_unknown_and_a_closed_room(store):
    for code in ("", "abc", "<script>"):
        at = phone({"room": code})
        assert not at.exception and "There is no room" in at.error[0].value
        assert not at.sidebar.children  # no sidebar on a phone
    at = phone({"room": "ZZZZZ"})
    assert [e.value for e in at.error] == ["There is no room ZZZZZ. Check the code on the screen."]
    code = store.open_room()
    at = phone({"room": code.lower()})  # typed in lower case: still the room
    assert "waiting for the presenter" in at.info[0].value
    store.close_room(code)
    at = phone({"room": code})
    assert [i.value for i in at.info] == [f"Room {code} is closed: the presenter stopped taking votes."]
    assert not at.button


def test_a_phone_votes_changes_its_vote_and_sees_the_result_after_the_reveal(store):
    step = STEPS[1]
    code = store.open_room()
    store.show_step(code, 1, choices=len(step.choices), answer=step.answer, texts=texts(step))
    text = step_text(step)
    at = phone({"room": code})
    assert not at.exception
    assert [b.label for b in at.button] == list(text.choices)
    assert any(text.question in m.value for m in at.markdown) and not at.get("plotly_chart") and not at.get("image")
    voter = at.query_params[ui_vote.VOTER_KEY]
    assert V.VOTER_PATTERN.match(voter)
    wrong = (step.answer + 1) % len(step.choices)
    at.button(key=f"vote_1_{wrong}").click().run()
    assert store.vote_of(code, 1, voter) == wrong
    assert at.success[0].value == f"Your vote: **{text.choices[wrong]}**. You can change it until the reveal."
    at.button(key=f"vote_1_{step.answer}").click().run()  # a change of mind
    assert store.vote_of(code, 1, voter) == step.answer and sum(store.tally(code, 1)) == 1
    # the presenter moves on: the phone's old button is stale, refused with a sentence, nothing changed
    old = at.button(key=f"vote_1_{wrong}")
    store.show_step(code, 2, choices=len(STEPS[2].choices), answer=STEPS[2].answer, texts=texts(STEPS[2]))
    old.click().run()
    assert "moved on" in at.warning[0].value and store.vote_of(code, 1, voter) == step.answer
    store.show_step(code, 1, choices=len(step.choices), answer=step.answer, texts=texts(step))
    store.reveal(code, 1)
    at.run()
    assert [s.value for s in at.success] == [f"Right: **{text.answer}**"]
    assert not at.button  # no voting after the reveal
    assert "The class voted (1):" in [m.value for m in at.markdown]


def test_a_phone_reads_the_question_in_its_language(store):
    step = STEPS[0]
    code = store.open_room()
    store.show_step(code, 0, choices=len(step.choices), answer=step.answer, texts=texts(step))
    at = phone({"room": code}, locale="zh-CN")
    assert not at.exception
    assert [b.label for b in at.button] == texts(step)["zh"]["choices"] != texts(step)["en"]["choices"]
    assert "点选你的答案。" in [c.value for c in at.caption]


def test_the_presenter_opens_a_room_sees_the_count_and_the_tally_then_closes_it(store):
    at = page_test("app_pages/tour.py", {"step": "2", "present": "1"})
    at.run()
    assert not at.exception
    at.button(key="vote_open").click().run()
    code = at.session_state[ui_vote.ROOM_STATE]
    assert at.query_params["vote"] == code  # a reload of the projector keeps the room
    room = store.room(code)
    assert room.open and room.step == 1  # the room follows the presenter's step
    question = store.question(code, 1)
    assert question.choices == len(STEPS[1].choices) and set(question.texts) == {"en", "zh"}
    link = ui_vote.phone_link(code)
    assert link.endswith(f"/vote?room={code}")
    assert any(link in m.value for m in at.markdown)
    assert at.get("image") and at.get("download_button")  # the QR code, the CSV
    assert "**0** voted on this question" in [m.value for m in at.markdown]
    step = STEPS[1]
    for n in range(3):
        store.cast(code, 1, f"phone-{n:04d}", [step.answer, step.answer, (step.answer + 1) % len(step.choices)][n])
    at.run()
    assert "**3** voted on this question" in [m.value for m in at.markdown]
    at.button(key="tour_reveal").click().run()
    assert not at.exception and store.question(code, 1).revealed
    text = step_text(step)
    assert "The class voted (3):" in [m.value for m in at.markdown]
    tally = next(m.value for m in at.markdown if text.answer in m.value and "✓" in m.value)
    assert f"✓ {text.answer}: **2** (67 %)" in tally
    at.button(key="tour_next").click().run()
    assert store.room(code).step == 2
    at.button(key="vote_close").click().run()
    assert not store.room(code).open
    assert [i.value for i in at.info] == [f"Room {code} is closed: phones can no longer vote."]
    csv = store.export_csv(code)
    assert csv.count("\n") == 4 and csv.startswith("room,step,voter,choice,correct,changes,cast_at")
    assert at.get("download_button")  # the votes stay downloadable once the room is closed
    at.button(key="vote_reopen").click().run()
    again = at.session_state[ui_vote.ROOM_STATE]
    assert again != code and store.room(again).open and store.room(again).step == 2 and not store.room(code).open


def test_a_room_panel_whose_room_is_gone_offers_a_new_one(store):
    at = page_test("app_pages/tour.py", {"step": "1", "present": "1", "vote": "ZZZZZ"})  # a room of another database
    at.run()
    assert not at.exception and at.button(key="vote_open")
    assert ui_vote.ROOM_STATE not in at.session_state and "vote" not in at.query_params
    for bad in ("<b>", "12"):  # not a room code at all: no room, no error
        at = page_test("app_pages/tour.py", {"step": "1", "present": "1", "vote": bad})
        at.run()
        assert not at.exception and at.button(key="vote_open")


def test_a_reloaded_projector_keeps_its_room_and_the_link_can_be_set(store, monkeypatch):
    code = store.open_room()
    monkeypatch.setenv(ui_vote.PUBLIC_URL_ENV, "http://class.example.org:8501/")
    at = page_test("app_pages/tour.py", {"step": "3", "present": "1", "vote": code.lower()})
    at.run()
    assert not at.exception and at.session_state[ui_vote.ROOM_STATE] == code and store.room(code).step == 2
    assert f"Vote at **http://class.example.org:8501/vote?room={code}** · room **{code}**" in [
        m.value for m in at.markdown]


def test_the_qr_code_is_a_png_of_the_link():
    import segno

    png = ui_vote.qr_png("http://192.168.1.20:8501/vote?room=ABCDE")
    assert png.startswith(b"\x89PNG")
    assert segno.make("http://192.168.1.20:8501/vote?room=ABCDE", error="m").version <= 4  # small: read from afar


def test_the_phones_page_imports_neither_torch_nor_the_lessons():
    """What the phone's page runs (ui.vote's phone screen, pe_core.votes) computes nothing: no torch, no sympy, not
    the guided lesson (a server that only phones visited stays at 79 MB a process in the load test). plotly comes
    with the app's shell (the ``ui`` package), as on every page."""
    import subprocess
    import sys

    probe = "import sys, ui.vote; print([m for m in ('torch', 'sympy', 'lessons.tour') if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          cwd=str(__import__("pathlib").Path(ROOT_APP).parent))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
