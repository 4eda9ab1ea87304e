"""Browser benchmark: how a slider move feels on every page, as a ratio to Streamlit's own floor.

    python -m benchmarks.browser [--moves 8] [--rounds 3] [--pages frequencies,decay] [--app DIR] [--json PATH]
    python -m benchmarks.browser --elements [--moves 8]
    python -m benchmarks.browser --warmup [--pages FIRST,READER] [--rounds 3]
    python -m benchmarks.browser --vote [--rounds 5]

In one run, in headless Chromium against local servers (nothing else is contacted):

- the floor: a minimal Streamlit app with one slider and one 64×512 heatmap (``floor_app.py``);
- the floor with ``PROSE_PARAGRAPHS`` paragraphs of static prose under it (a lesson page's element count, with
  nothing else changed): what a page's length costs a move in Streamlit itself when the text follows the chart
  (the browser re-renders every element of a rerun before the chart is handed its figure, so text under the
  chart delays it too: about 1.6 ms a paragraph with inline maths on a server that does not collect garbage after
  the run, as the app's does not; on the floor the collection mostly hides it);
- the floor under the app's own ``.streamlit/config.toml`` (Streamlit's defaults collect garbage after every run,
  30-60 ms of the floor's move on a 2-core machine, and check every message the page posts itself against 16
  hosting origins): a second reference row, not the ratios' base, measured with the pages in every round;
- each page's same-length floor: the floor under the app's config with a paragraph for each element the page
  sends a move beyond the floor's (to ``SAME_LENGTH_STEP``), above its chart as many as had come in before the
  page's first redrawn figure, in the same rounds as the pages. A page at 1.0x of it moves as fast as Streamlit
  redraws that many elements: what is left above the floor is the page's length. (On a 2-core machine every
  message of a move's run is in before the browser redraws the first figure, so all of them go above.);
- every page of the app (``--app DIR`` measures another checkout, e.g. an older commit).

For each it reports, as milliseconds and as a ratio to the floor:

- first load: a fresh browser tab on a warm server until every figure is drawn and the app is idle;
- cold first page: a fresh server process until its first page has drawn its figures;
- first change: from the arrow-key press on the page's first slider that redraws a figure (on a long page
  split into parts, a sidebar slider may only drive the closed parts) to the first redrawn figure;
- settled: from the key press until no figure has changed for ``QUIET_MS`` and the app is idle;

and, as a count, the messages a move brings from the server: one for each element the run sends, and a few for
the run itself. Streamlit's browser renders every element a run sends again, changed or not, before the chart is
handed its figure, so this count is what a page's length costs its moves.

``--elements`` measures instead what one element of each kind costs a move: the floor with ``ELEMENTS_ADDED`` of
them under its chart (``floor_app.py``'s query parameters), alternated with the bare floor in one browser.

``--vote`` measures a phone's vote screen (``/vote?room=CODE`` at 390 px, a room opened in a run store of its own):
its first load in a fresh browser context on a warm server, until the choices show and the app is idle, against
``minimal_vote_app.py`` (a bare Streamlit app with the same question and buttons), alternated over the rounds.

``--warmup`` measures what the server's background warm-up costs a reader: a fresh server draws one page (which
starts the warm-up a few seconds later), then the reader opens another page and moves its slider; the same on a
server whose warm-up is off, alternated over the rounds. 1.00x is a warm-up the reader never meets.

The floor and the pages are measured in ``--rounds`` rounds, in turn. Each round starts a fresh browser and fresh
servers, and measures both cold first pages again: a process's luck moved one round's floor by a fifth from one
run to the next, and every ratio with it. A row's first change and settled time are the medians of all its moves
in all rounds: one move of the floor takes anything from 90 to 230 ms on a 2-core machine, so the median of one
round's moves still wanders by a tenth or more. The floor with prose is measured once. Moves alternate right and
left so each page stays near its defaults. Times are taken inside the page (``performance.now()`` at the key event
and at each redraw), so the browser driver's own latency does not count.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import (
    CHART_CLASS,
    CHARTS,
    ROOT,
    SCRIPT_IDLE_JS,
    figures_signature,
    has_slider,
    live_slider,
    other_key,
    press_slider,
    streamlit_server,
    wait_for_new_figures,
)
from benchmarks.harness import browser as chromium

HERE = Path(__file__).resolve().parent
FLOOR_APP = HERE / "floor_app.py"
QUIET_MS = 1000
# The lesson pages show 50-106 elements (markdown, captions, formulas, widgets, charts and their menus).
PROSE_PARAGRAPHS = 60
# A page's same-length floor has its element count in paragraphs, rounded to this: pages of nearly one length
# share one floor, which keeps the run short.
SAME_LENGTH_STEP = 5
METRICS = (("first_change_ms", "first change"), ("settled_ms", "settled"), ("first_load_ms", "first load"))

# Records a timestamp for each key press and each figure redraw (a new data array on a plot element).
WATCH_JS = """() => {
  if (window.__bench) return;
  const state = {keys: [], changes: [], received: [], seen: new WeakMap()};
  window.__bench = state;
  document.addEventListener('keydown', () => state.keys.push(performance.now()), true);
  // a redraw either gives a plot element a new data array or replaces the element itself; the plot elements
  // are a live list, not a query of the whole page every frame (≈ 20 ms of a move on a long page)
  const plots = document.getElementsByClassName('js-plotly-plot');
  const scan = (record) => {
    let changed = false;
    for (const el of plots) {
      const data = el.data;
      if (data && state.seen.get(el) !== data) {
        changed = true;
        state.seen.set(el, data);
      }
    }
    if (changed && record) {
      state.changes.push(performance.now());
      state.received.push(window.__benchMessages || 0);  // the server's messages in by this redraw
    }
  };
  scan(false);
  const tick = () => { scan(true); requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
}"""
# Counts the server's messages (one per element a run sends, and a few per run): run before the page's own scripts.
COUNT_MESSAGES_JS = """(() => {
  const Native = window.WebSocket;
  window.__benchMessages = 0;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', () => { window.__benchMessages += 1; });
    }
  };
})();"""
# every chart drawn, but for the app's charts far off screen (drawn when scrolled to)
FIGURES_DRAWN_JS = """(count) => {
  const charts = document.querySelectorAll('CHARTS');
  return charts.length >= count && Array.from(charts).every(
    (el) => el._fullLayout || (el.classList.contains('CHART_CLASS') && !el.__peNear));
}""".replace("CHARTS", CHARTS).replace("CHART_CLASS", CHART_CLASS)


def _wait_until_drawn(page, figures: int, timeout_ms: float = 120_000) -> None:
    page.wait_for_selector(CHARTS, timeout=timeout_ms)
    page.wait_for_function(FIGURES_DRAWN_JS, arg=max(1, figures), timeout=timeout_ms)
    page.wait_for_function(SCRIPT_IDLE_JS, timeout=timeout_ms)


def _settle(page, timeout_ms: float = 60_000) -> None:
    """Wait until the app is idle and no figure has changed for QUIET_MS."""
    deadline = time.perf_counter() + timeout_ms / 1000
    while time.perf_counter() < deadline:
        page.wait_for_function(SCRIPT_IDLE_JS, timeout=timeout_ms)
        last = page.evaluate("() => Math.max(0, ...window.__bench.changes, ...window.__bench.keys)")
        now = page.evaluate("() => performance.now()")
        if now - last >= QUIET_MS:
            return
        page.wait_for_timeout(QUIET_MS - (now - last) + 20)
    raise TimeoutError("the page did not settle")


def measure_page(browser, url: str, moves: int, slider: int = 0) -> dict:
    """First load, then ``moves`` arrow-key moves of the first slider that redraws a figure (from the
    ``slider``-th: a warm-up run's choice): first change and settled times (ms), and the messages each move
    brought from the server."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(COUNT_MESSAGES_JS)
    page = context.new_page()
    started = time.perf_counter()
    page.goto(url, timeout=120_000)
    page.wait_for_selector(CHARTS, timeout=120_000)
    figures = page.locator(CHARTS).count()
    _wait_until_drawn(page, figures)
    first_load = 1000 * (time.perf_counter() - started)
    page.evaluate(WATCH_JS)
    _settle(page)
    slider, thumb, there = live_slider(page, slider)
    _settle(page)
    first_changes, settled, messages, before_change = [], [], [], []
    back = other_key(there)
    _watch_the_chart_it_moves(page, thumb, there, back)
    for move in range(moves):
        before, received = page.evaluate("() => [window.__bench.changes.length, window.__benchMessages]")
        press_slider(page, thumb, there if move % 2 == 0 else back)
        page.wait_for_function("(n) => window.__bench.changes.length > n", arg=before, timeout=60_000)
        _settle(page)
        key, changes, by_change, now_received = page.evaluate(
            "() => [window.__bench.keys.at(-1), window.__bench.changes, window.__bench.received, window.__benchMessages]")
        first = next(n for n in range(before, len(changes)) if changes[n] >= key)
        first_changes.append(changes[first] - key)
        settled.append(changes[-1] - key)
        messages.append(now_received - received)
        before_change.append(by_change[first] - received)
    context.close()
    return {"figures": figures, "first_load_ms": first_load, "slider": slider,
            "first_change_ms": statistics.median(first_changes), "settled_ms": statistics.median(settled),
            "messages": statistics.median(messages), "messages_before_change": statistics.median(before_change),
            "moves": moves, "first_changes": first_changes,
            "settled_moves": settled}


def _watch_the_chart_it_moves(page, thumb, there: str, back: str) -> None:
    """Scroll the first chart the slider changes into view, as a reader watches what the slider moves (the
    app draws charts near the screen; those far off it are drawn when scrolled to)."""
    before = figures_signature(page)
    press_slider(page, thumb, there)
    after = wait_for_new_figures(page, before, timeout_ms=60_000)
    changed = next((n for n, (a, b) in enumerate(zip(before, after, strict=False)) if a != b), 0)
    page.locator(CHARTS).nth(changed).evaluate("(el) => el.scrollIntoView({block: 'center'})")
    _settle(page)
    press_slider(page, thumb, back)
    _settle(page)


def draw_page(browser, url: str) -> None:
    """Open ``url`` in a fresh tab until every figure is drawn, then close the tab."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(url, timeout=120_000)
    page.wait_for_selector(CHARTS, timeout=120_000)
    _wait_until_drawn(page, page.locator(CHARTS).count())
    context.close()


def cold_first_page(app_dir: Path, script: str, path: str, browser) -> float:
    """Seconds-as-ms from starting a server process until its first page has drawn every figure."""
    started = time.perf_counter()
    with streamlit_server(cwd=app_dir, script=script) as (base_url, _):
        draw_page(browser, f"{base_url}/{path}")
        elapsed = 1000 * (time.perf_counter() - started)
    return elapsed


def _pages(app_dir: Path) -> list[tuple[str, str]]:
    """(title, url path) of every page with a slider, as the app at ``app_dir`` lists them."""
    sys.path.insert(0, str(app_dir))
    try:
        import importlib

        pages = importlib.import_module("ui.pages")
        listed = pages.available_pages()
        try:
            lessons = importlib.import_module("lessons").all_lessons()
            chosen = [(p.title, p.url_path) for p in listed if has_slider(p, lessons)]
        except ImportError:  # a checkout from before the lessons layer: its pages without sliders by name
            chosen = [(p.title, p.url_path) for p in listed
                      if p.url_path not in ("", "derivations", "references", "glossary")]
    finally:
        sys.path.remove(str(app_dir))
        for name in [m for m in sys.modules if m.split(".")[0] in ("ui", "lessons", "pe_core", "figures", "i18n")]:
            del sys.modules[name]
    return chosen


def combine_rounds(measured: list[dict]) -> dict:
    """One row from a page's (or the floor's) measurements in several rounds: first change and settled as the
    medians of every move of every round, first load as the median of the rounds, and each round's own medians
    (``rounds``: [[first change, settled], ...]) to show their spread."""
    first_changes = [t for m in measured for t in m["first_changes"]]
    settled = [t for m in measured for t in m["settled_moves"]]
    return {**measured[0], "first_changes": first_changes, "settled_moves": settled, "moves": len(first_changes),
            "first_change_ms": statistics.median(first_changes), "settled_ms": statistics.median(settled),
            "first_load_ms": statistics.median(m["first_load_ms"] for m in measured),
            "messages": statistics.median(m["messages"] for m in measured),
            "messages_before_change": statistics.median(m["messages_before_change"] for m in measured),
            "rounds": [[m["first_change_ms"], m["settled_ms"]] for m in measured]}


def same_length_paragraphs(page: dict, floor: dict) -> tuple[int, int]:
    """The paragraphs (above the chart, below it) that make the floor's move send as many messages as ``page``'s,
    as many of them before its chart's redraw as before the page's first redrawn figure (to ``SAME_LENGTH_STEP``)."""
    def steps(extra: float) -> int:
        return max(0, SAME_LENGTH_STEP * round(extra / SAME_LENGTH_STEP))

    above = steps(page["messages_before_change"] - floor["messages_before_change"])
    return above, steps(page["messages"] - floor["messages"] - above)


def run(app_dir: Path, moves: int, only: set[str] | None, rounds: int = 3) -> dict:
    """Every row of the table. Each round starts its own browser and servers (two runs of one round each once
    put the floor 20% apart while each run's rounds agreed within 6%: a process's luck, not the page, moved it),
    and measures the floor and the pages in turn (the order reversed every other round), so a slow or fast spell
    of the machine reaches the floor as it reaches the pages. The cold first pages are measured every round too.

    Each page is also measured against its same-length floor: the floor under the app's config with as many
    paragraphs as the page sends elements a move, placed as the page's messages reach the browser before and after
    its first redrawn figure (``same_length_paragraphs``, from the first round's warm visits), in the same rounds.
    A page at 1.0x of it is as quick as Streamlit draws that many elements."""
    results: dict = {"floor": {}, "pages": {}, "app": str(app_dir), "rounds": rounds}
    pages = [(t, p) for t, p in _pages(app_dir) if not only or p in only]
    measured: dict[str, list[dict]] = {"": [], **{path: [] for _, path in pages}}
    sliders: dict[str, int] = {}  # each page's slider, as its first warm visit chose it
    lengths: dict[str, tuple[int, int]] = {}  # each page's same-length floor: paragraphs above and below its chart
    same_floors: list[tuple[int, int]] = []  # every same-length floor measured
    cold: dict[str, list[float]] = {"floor": [], "app": []}
    for turn in range(rounds):
        with chromium() as browser:
            colds = [("floor", HERE, FLOOR_APP.name, "")] + ([("app", app_dir, "app.py", pages[0][1])] if pages else [])
            for name, directory, script, path in colds if turn % 2 == 0 else colds[::-1]:
                cold[name].append(cold_first_page(directory, script, path, browser))
            if turn == 0:
                _reference_rows(browser, moves, results)
            with contextlib.ExitStack() as servers:
                floor_url, _ = servers.enter_context(streamlit_server(cwd=HERE, script=FLOOR_APP.name))
                base_url, _ = servers.enter_context(streamlit_server(cwd=app_dir))
                same_url, _ = servers.enter_context(streamlit_server(
                    cwd=servers.enter_context(floor_under_app_config(app_dir)), script=FLOOR_APP.name))
                # (name, url): the floor's row is "", each page's its path; a first visit warms the server's caches
                targets = [("", floor_url)] + [(path, f"{base_url}/{path}") for _, path in pages]
                warm = {name: measure_page(browser, url, 1, sliders.get(name, 0)) for name, url in targets}
                sliders.update((name, visit["slider"]) for name, visit in warm.items())
                if turn == 0:
                    lengths = {path: same_length_paragraphs(warm[path], warm[""]) for _, path in pages}
                    # (0, 0): the floor under the app's config itself, the reference row
                    same_floors = sorted({(0, 0), *lengths.values()})
                    measured.update((_same_length_row(n), []) for n in same_floors)
                targets += [(_same_length_row(n), f"{same_url}/?above={n[0]}&paragraphs={n[1]}") for n in same_floors]
                for name, url in targets if turn % 2 == 0 else targets[::-1]:
                    measured[name].append(measure_page(browser, url, moves, sliders.get(name, 0)))
                    print(f"  round {turn + 1}/{rounds}: measured {name or 'floor'}", file=sys.stderr, flush=True)
    results["floor"].update(combine_rounds(measured.pop("")))
    results["same_length"] = {_same_length_row(n): combine_rounds(measured.pop(_same_length_row(n)))
                              for n in same_floors}
    results["floor_configured"] = results["same_length"][_same_length_row((0, 0))]
    results["floor"]["cold_first_page_ms"] = statistics.median(cold["floor"])
    results["floor"]["cold_rounds"] = cold["floor"]
    if pages:
        results["cold_first_page_ms"], results["cold_rounds"] = statistics.median(cold["app"]), cold["app"]
        results["cold_first_page"] = pages[0][1]
    titles = {path: title for title, path in pages}
    results["pages"] = {path: {"title": titles[path], "same_length_paragraphs": list(lengths[path]),
                               **combine_rounds(runs)} for path, runs in measured.items()}
    return results


def _same_length_row(paragraphs: tuple[int, int]) -> str:
    return f"floor + {paragraphs[0]} + {paragraphs[1]} paragraphs, app's config"


@contextlib.contextmanager
def floor_under_app_config(app_dir: Path):
    """A folder to run the floor app from under ``app_dir``'s ``.streamlit/config.toml`` (Streamlit reads the
    config of the folder it is started in)."""
    with tempfile.TemporaryDirectory(prefix="floor-") as folder:
        (Path(folder) / ".streamlit").mkdir()
        shutil.copy(app_dir / ".streamlit" / "config.toml", Path(folder) / ".streamlit" / "config.toml")
        shutil.copy(FLOOR_APP, Path(folder) / FLOOR_APP.name)
        yield Path(folder)


def _reference_rows(browser, moves: int, results: dict) -> None:
    """The floor with prose, measured once (warm, as the pages are)."""
    with streamlit_server(cwd=HERE, script=FLOOR_APP.name) as (floor_url, _):
        prose_url = f"{floor_url}/?paragraphs={PROSE_PARAGRAPHS}"
        measure_page(browser, prose_url, 1)
        results["floor_prose"] = measure_page(browser, prose_url, moves)


# The floor's element kinds (its query parameters) and how many of each are added under its chart.
ELEMENT_KINDS = {
    "paragraphs": "paragraph with inline maths",
    "plain": "paragraph without maths",
    "formulas": "display formula (st.latex)",
    "merged": "maths paragraph, all in one st.markdown",
    "sliders": "slider the move leaves alone",
}
ELEMENTS_ADDED = 30


def element_costs(moves: int, rounds: int = 2) -> dict:
    """First change and settled of the floor with ``ELEMENTS_ADDED`` elements of each kind, and of the bare floor,
    alternated over ``rounds`` (medians); each kind's cost per element is its difference to the bare floor."""
    variants = {"": "", **{kind: f"{kind}={ELEMENTS_ADDED}" for kind in ELEMENT_KINDS}}
    measured: dict[str, list[dict]] = {name: [] for name in variants}
    with chromium() as browser, streamlit_server(cwd=HERE, script=FLOOR_APP.name) as (url, _):
        for query in variants.values():
            measure_page(browser, f"{url}/?{query}", 1)  # warm
        for turn in range(rounds):
            order = list(variants.items()) if turn % 2 == 0 else list(variants.items())[::-1]
            for name, query in order:
                measured[name].append(measure_page(browser, f"{url}/?{query}", moves))
                print(f"  measured {name or 'floor'}", file=sys.stderr, flush=True)
    medians = {name: {key: statistics.median(run[key] for run in runs) for key in ("first_change_ms", "settled_ms")}
               for name, runs in measured.items()}
    return {"added": ELEMENTS_ADDED, "floor": medians.pop(""), "kinds": medians}


# The reader's page is opened this long after the server's first page has drawn: the warm-up (``ui.warmup``) starts
# WARM_DELAY_S (6 s) after that page's script ends, and takes minutes on two cores, so the reader meets it at work.
WARMUP_READER_DELAY_S = 7.0


def warmup_costs(app_dir: Path, first: str, reader: str, moves: int, rounds: int = 3) -> dict:
    """What the background warm-up costs a reader: a fresh server opens ``first`` (which starts the warm-up), and
    ``WARMUP_READER_DELAY_S`` later the reader opens ``reader`` and moves its slider, on a server with the warm-up
    and on one without (``PE_EXPLORER_WARMUP=0``), alternated over ``rounds`` (medians of every round's moves)."""
    measured: dict[str, list[dict]] = {"on": [], "off": []}
    with chromium() as browser:
        for turn in range(rounds):
            for mode in ("on", "off") if turn % 2 == 0 else ("off", "on"):
                env = {"PE_EXPLORER_WARMUP": "1" if mode == "on" else "0"}
                with streamlit_server(cwd=app_dir, env=env) as (base_url, _):
                    draw_page(browser, f"{base_url}/{first}")  # the warm-up starts WARM_DELAY_S after this page
                    time.sleep(WARMUP_READER_DELAY_S)
                    measured[mode].append(measure_page(browser, f"{base_url}/{reader}", moves))
                print(f"  round {turn + 1}/{rounds}: measured the reader with the warm-up {mode}", file=sys.stderr,
                      flush=True)
    return {"first": first, "reader": reader, "delay_s": WARMUP_READER_DELAY_S, "rounds": rounds,
            **{mode: combine_rounds(runs) for mode, runs in measured.items()}}


def warmup_table(results: dict) -> str:
    on, off = results["on"], results["off"]
    lines = [f"a reader opens {results['reader']} {results['delay_s']:.0f} s after a fresh server drew "
             f"{results['first']} ({results['rounds']} rounds, medians)",
             f"{'':<22}" + "".join(f"{label:>22}" for _, label in METRICS)]
    for name, row in (("warm-up off", off), ("warm-up running", on)):
        lines.append(f"{name:<22}" + "".join(f"{row[key]:>14.0f} ms {row[key] / off[key]:>4.2f}x"
                                             for key, _ in METRICS))
    return "\n".join(lines)


def element_table(results: dict) -> str:
    floor, added = results["floor"], results["added"]
    lines = [f"{'under the chart':<48}{'first change':>14}{'settled':>10}{'per element':>14}",
             f"{'nothing (the floor)':<48}{floor['first_change_ms']:>11.0f} ms{floor['settled_ms']:>7.0f} ms"]
    for kind, row in results["kinds"].items():
        each = (row["first_change_ms"] - floor["first_change_ms"]) / added
        lines.append(f"{f'{added} × {ELEMENT_KINDS[kind]}':<48}{row['first_change_ms']:>11.0f} ms"
                     f"{row['settled_ms']:>7.0f} ms{each:>11.2f} ms")
    return "\n".join(lines)


def table(results: dict) -> str:
    floor = results["floor"]
    spread = results.get("rounds", 1) > 1
    lines = [f"{'page':<22}" + "".join(f"{label:>22}" for _, label in METRICS) + f"{'messages':>10}"
             + ("   first change by round" if spread else "")]
    lines.append(f"{'floor (1 slider)':<22}" + "".join(f"{floor[key]:>14.0f} ms 1.00x" for key, _ in METRICS)
                 + _messages(floor) + (_by_round(floor) if spread else ""))
    rows = list(results["pages"].items())
    if "floor_prose" in results:
        rows.insert(0, (f"floor + {PROSE_PARAGRAPHS} paragraphs", results["floor_prose"]))
    if "floor_configured" in results:
        rows.insert(0, ("floor, app's config", results["floor_configured"]))
    for path, row in rows:
        cells = "".join(f"{row[key]:>14.0f} ms {row[key] / floor[key]:>4.2f}x" for key, _ in METRICS)
        lines.append(f"{path[:22]:<22}{cells}" + _messages(row) + (_by_round(row) if spread else ""))
    if "cold_first_page_ms" in results:
        cold, floor_cold = results["cold_first_page_ms"], floor["cold_first_page_ms"]
        lines.append(f"cold server, first page ({results['cold_first_page']}): {cold:.0f} ms, "
                     f"{cold / floor_cold:.2f}x the floor's {floor_cold:.0f} ms")
        if "cold_rounds" in results:
            lines.append(f"  by round: the page {_ms_list(results['cold_rounds'])}, "
                         f"the floor {_ms_list(floor['cold_rounds'])}")
    if results.get("same_length"):
        lines += ["", same_length_table(results)]
    return "\n".join(lines)


def same_length_table(results: dict) -> str:
    """Each page against the floor that sends as many elements a move, as many of them before the redraw, under the
    app's config, in the same run."""
    floors = results["same_length"]
    lines = ["against the same-length floor: the floor under the app's config with a paragraph for each element the "
             "page sends, above its chart as many as come before the page's first redrawn figure",
             f"{'page':<22}{'above + below':>14}" + "".join(f"{label:>26}" for _, label in METRICS[:2])]
    for path, row in results["pages"].items():
        above, below = row.get("same_length_paragraphs", (None, None))
        same = floors.get(_same_length_row((above, below)))
        if same is None:
            continue
        cells = "".join(f"{row[key]:>9.0f} / {same[key]:>4.0f} ms {row[key] / same[key]:>4.2f}x" for key, _ in METRICS[:2])
        lines.append(f"{path[:22]:<22}{f'{above} + {below}':>14}{cells}")
    return "\n".join(lines)


def _messages(row: dict) -> str:
    """The median count of server messages a move brought (blank for results from before it was counted)."""
    return f"{row['messages']:>10.0f}" if "messages" in row else " " * 10


def _ms_list(values: list[float]) -> str:
    return " ".join(f"{value:.0f}" for value in values) + " ms"


def _by_round(row: dict) -> str:
    return "   " + " ".join(f"{first:.0f}" for first, _ in row["rounds"]) if "rounds" in row else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.browser", description=__doc__.split("\n\n")[0])
    parser.add_argument("--moves", type=int, default=8, help="slider moves per page and round")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds over the floor and the pages, in turn (medians over all moves reported)")
    parser.add_argument("--pages", help="URL paths to measure, comma-separated (default: every page with a slider)")
    parser.add_argument("--app", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--elements", action="store_true",
                        help="what one element of each kind costs a move, on the floor (instead of the pages)")
    parser.add_argument("--warmup", action="store_true",
                        help="what the background warm-up costs a reader: the second page of --pages (default: the "
                             "first two pages with a slider) opened while the warm-up that the first started runs, "
                             "against a server without it (instead of the pages)")
    parser.add_argument("--vote", action="store_true",
                        help="a phone's vote screen against a minimal app with the same question (instead of the pages)")
    parser.add_argument("--json", type=Path, help="where to write the results (default: benchmarks/results/)")
    args = parser.parse_args(argv)
    if args.vote:
        results = vote_screen(args.app.resolve(), max(1, args.rounds))
        print(f"phone vote screen, first load: {results['vote_first_load_ms']:.0f} ms; minimal app: "
              f"{results['minimal_first_load_ms']:.0f} ms ({results['ratio']:.2f}x); the same under the app's config: "
              f"{results['minimal_app_config_first_load_ms']:.0f} ms ({results['ratio_to_app_config']:.2f}x)")
        return _write(results, args.json or HERE / "results" / "browser_vote.json")
    if args.elements:
        results = element_costs(args.moves)
        print(element_table(results))
        return _write(results, args.json or HERE / "results" / "browser_elements.json")
    only = set(args.pages.split(",")) if args.pages else None
    if args.rounds < 1 or args.moves < 1:
        parser.error("--rounds and --moves must be at least 1")
    if args.warmup:
        paths = args.pages.split(",") if args.pages else [path for _, path in _pages(args.app.resolve())][:2]
        if len(paths) != 2:
            parser.error("--warmup needs two pages: the server's first, then the reader's")
        results = warmup_costs(args.app.resolve(), paths[0], paths[1], args.moves, args.rounds)
        print(warmup_table(results))
        return _write(results, args.json or HERE / "results" / "browser_warmup.json")
    results = run(args.app.resolve(), args.moves, only, args.rounds)
    print(table(results))
    return _write(results, args.json or HERE / "results" / "browser.json")


PHONE_VIEW = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


def _first_load(browser, url: str, ready: str) -> float:
    """A fresh phone-sized context: from the request until ``ready`` shows and the app is idle (ms)."""
    context = browser.new_context(**PHONE_VIEW)
    page = context.new_page()
    started = time.perf_counter()
    page.goto(url, timeout=120_000)
    page.wait_for_selector(ready, timeout=120_000)
    page.wait_for_function(SCRIPT_IDLE_JS, timeout=120_000)
    elapsed = 1000 * (time.perf_counter() - started)
    context.close()
    return elapsed


def vote_screen(app_dir: Path, rounds: int) -> dict:
    """The phone's vote screen against a minimal app showing the same question and buttons (``--vote``)."""
    sys.path.insert(0, str(app_dir))
    from pe_core.votes import open_votes

    store_path = Path(tempfile.mkdtemp(prefix="pe-bench-votes-")) / "runs.sqlite3"
    with open_votes(str(store_path)) as store:
        code = store.open_room()
        texts = {"en": {"title": "The frequency spectrum", "question": "A model is trained on L = 4,096 tokens. How "
                        "many of its 64 pairs complete at least one full turn within L?",
                        "choices": ["All of them", "Most, but not the slowest", "Only the first few"],
                        "answer": "Most, but not the slowest"}}
        store.show_step(code, 1, choices=3, answer=1, texts=texts)
    ready = ".st-key-vote_1_2 button"
    times: dict[str, list[float]] = {"minimal": [], "minimal_app_config": [], "vote": []}
    env = {"PE_RUN_STORE": str(store_path), "PE_EXPLORER_WARMUP": "0"}
    configured = Path(tempfile.mkdtemp(prefix="minimal-vote-"))  # the minimal app under the app's config too
    (configured / ".streamlit").mkdir()
    shutil.copy(app_dir / ".streamlit" / "config.toml", configured / ".streamlit" / "config.toml")
    shutil.copy(HERE / "minimal_vote_app.py", configured / "minimal_vote_app.py")
    with chromium() as browser, streamlit_server(cwd=HERE, script="minimal_vote_app.py") as (minimal_url, _), \
            streamlit_server(cwd=configured, script="minimal_vote_app.py") as (configured_url, _), \
            streamlit_server(cwd=app_dir, env=env) as (app_url, _):
        targets = [("minimal", minimal_url), ("minimal_app_config", configured_url),
                   ("vote", f"{app_url}/vote?room={code}")]
        for _name, url in targets:  # a first visit warms each server
            _first_load(browser, url, ready)
        for turn in range(rounds):
            for name, url in targets if turn % 2 == 0 else targets[::-1]:
                times[name].append(_first_load(browser, url, ready))
    shutil.rmtree(configured, ignore_errors=True)
    minimal, vote = statistics.median(times["minimal"]), statistics.median(times["vote"])
    configured_ms = statistics.median(times["minimal_app_config"])
    return {"minimal_first_load_ms": round(minimal, 1), "minimal_app_config_first_load_ms": round(configured_ms, 1),
            "vote_first_load_ms": round(vote, 1), "ratio": round(vote / minimal, 2),
            "ratio_to_app_config": round(vote / configured_ms, 2), "rounds": rounds,
            **{f"{name}_rounds": [round(t, 1) for t in values] for name, values in times.items()},
            "viewport": PHONE_VIEW["viewport"]}


def _write(results: dict, path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
