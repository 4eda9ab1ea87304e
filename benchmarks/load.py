"""Bounded load check: N concurrent headless-Chromium sessions move sliders on one page.

    python -m benchmarks.load [--page frequencies] [--sessions 20] [--seconds 30]

Starts its own `streamlit run app.py` on a free localhost port (nothing else is contacted),
opens N isolated browser contexts, and in each one repeatedly moves the first slider and waits
for the figure to change. Reports p50/p95 latency, errors, and checks isolation: every session
starts from its own URL value and must still show its own value at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from benchmarks.harness import CHROMIUM, CHROMIUM_ARGS, streamlit_server

SIGNATURE_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el => {
    const data = el.data || [];
    return JSON.stringify(data.map(t => [t.x, t.y, t.z])).slice(0, 4000);
}).join('|')"""
CHANGED_JS = "(before) => (" + SIGNATURE_JS + ")() !== before"
IDLE_JS = "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"


async def _session(browser, url: str, seconds: float, latencies: list, errors: list) -> dict:
    context = await browser.new_context(viewport={"width": 1300, "height": 900})
    page = await context.new_page()
    moves = presses = 0
    try:
        await page.goto(url, timeout=120_000)
        await page.wait_for_selector(".js-plotly-plot", timeout=120_000)
        await page.wait_for_function(IDLE_JS, timeout=120_000)
        thumb = page.locator('[data-testid="stSlider"] input[type="range"]').first
        start_value = await thumb.get_attribute("aria-valuetext")
        deadline = time.perf_counter() + seconds
        direction = "ArrowRight"
        while time.perf_counter() < deadline:
            before = await page.evaluate(SIGNATURE_JS)
            await thumb.focus()
            started = time.perf_counter()
            await thumb.press(direction)
            presses += 1
            try:
                await page.wait_for_function(CHANGED_JS, arg=before, timeout=30_000)
                latencies.append(time.perf_counter() - started)
                moves += 1
            except Exception as err:  # noqa: BLE001 - a timeout is a measured failure, not a crash
                errors.append(f"no redraw: {type(err).__name__}")
            await page.wait_for_function(IDLE_JS, timeout=60_000)
            direction = "ArrowLeft" if direction == "ArrowRight" else "ArrowRight"
        if await page.locator('[data-testid="stException"]').count():
            errors.append("exception shown on page")
        end_value = await thumb.get_attribute("aria-valuetext")
        # an even number of alternating presses returns every session to its own start value
        expected_same = presses % 2 == 0
        return {"moves": moves, "isolated": (start_value == end_value) == expected_same}
    finally:
        await context.close()


async def _run(page: str, sessions: int, seconds: float, query_for) -> dict:
    from playwright.async_api import async_playwright

    with streamlit_server() as (base_url, startup):
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            latencies: list[float] = []
            errors: list[str] = []
            started = time.perf_counter()
            results = await asyncio.gather(*[
                _session(browser, f"{base_url}/{page}?{query_for(i)}", seconds, latencies, errors)
                for i in range(sessions)
            ], return_exceptions=True)
            elapsed = time.perf_counter() - started
            await browser.close()
    crashed = [repr(r) for r in results if isinstance(r, BaseException)]
    finished = [r for r in results if isinstance(r, dict)]
    ordered = sorted(latencies)
    return {
        "page": page,
        "sessions": sessions,
        "seconds": seconds,
        "server_startup_s": round(startup, 2),
        "wall_s": round(elapsed, 1),
        "moves": len(latencies),
        "p50_ms": round(1000 * statistics.median(ordered), 1) if ordered else None,
        "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 1) if ordered else None,
        "max_ms": round(1000 * ordered[-1], 1) if ordered else None,
        "errors": errors + crashed,
        "sessions_isolated": sum(r["isolated"] for r in finished),
        "sessions_finished": len(finished),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--page", default="frequencies", help="page url path (file stem)")
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--json", default="benchmarks/results/load.json")
    args = parser.parse_args()
    if not 1 <= args.sessions <= 50 or not 1 <= args.seconds <= 300:
        parser.error("keep the load bounded: 1-50 sessions, 1-300 seconds")
    # each session starts from its own head-dim so a leak between sessions would be visible
    head_dims = ["16", "32", "64", "96", "128"]
    report = asyncio.run(_run(args.page, args.sessions, args.seconds, lambda i: f"d={head_dims[i % len(head_dims)]}"))
    print(json.dumps(report, indent=2))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
