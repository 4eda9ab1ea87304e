"""A Streamlit client that speaks the browser's protocol, for load tests without browsers.

What a browser does, in the same order and with Streamlit's own protobuf messages:

1. ``GET /<page>?<query>`` (index.html, and the scripts and styles it names when ``assets``),
   ``GET /_stcore/health`` (sets the ``_streamlit_xsrf`` cookie) and ``GET /_stcore/host-config``;
2. open the websocket ``/_stcore/stream`` with the sub-protocols ``streamlit, <xsrf token>`` and
   every cookie (a sticky-session proxy's included), from the page's origin;
3. send a ``BackMsg`` ``rerun_script`` (the page's query string, the page name from the URL on the
   first run and the page's script hash afterwards, every widget state, the hashes of the cached
   messages it holds, the browser context), then read ``ForwardMsg``s until ``script_finished``.

Messages the server marks cacheable are kept and their hashes sent back, so the server answers
with ``ref_hash`` references exactly as it does for a browser. The client records what the run
showed: sliders, plotly figures, exceptions and error boxes.
"""

from __future__ import annotations

import hashlib
import re
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import websocket
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.Slider_pb2 import Slider as SliderProto
from streamlit.proto.WidgetStates_pb2 import WidgetState

XSRF_COOKIE = "_streamlit_xsrf"
ASSET_PATTERN = re.compile(r'<(?:script|link)\b[^>]*?(?:src|href)="\./(static/[^"]+\.(?:js|css))"')


class ProtocolError(Exception):
    """The server closed, timed out, or answered something a browser would not accept."""


@dataclass(frozen=True)
class Slider:
    """A slider or select_slider as the deltas describe it."""

    id: str
    key: str
    label: str
    select: bool
    options: tuple[str, ...]
    default: tuple[float, ...]
    minimum: float
    maximum: float
    step: float
    integer: bool
    dated: bool = False  # a date/time slider (not supported by the load test)

    @classmethod
    def from_proto(cls, proto: SliderProto) -> Slider:
        return cls(
            id=proto.id, key=proto.query_param_key, label=proto.label,
            select=proto.type == SliderProto.Type.SELECT_SLIDER, options=tuple(proto.options),
            default=tuple(proto.default), minimum=proto.min, maximum=proto.max, step=proto.step,
            integer=proto.data_type == SliderProto.DataType.INT,
            dated=not proto.options and proto.data_type not in (SliderProto.DataType.INT, SliderProto.DataType.FLOAT),
        )

    def values(self, limit: int = 8) -> tuple[str | float, ...]:
        """The values a student can pick: every option of a select_slider, or up to ``limit`` stops."""
        if self.select:
            return self.options
        stops = int(round((self.maximum - self.minimum) / self.step)) if self.step else 0
        count = min(limit, stops + 1)
        indices = sorted({round(i * stops / max(1, count - 1)) for i in range(count)})
        return tuple(self._number(self.minimum + i * self.step) for i in indices)

    def _number(self, value: float) -> float:
        return float(int(round(value))) if self.integer else round(value, 12)

    def default_value(self) -> str | float:
        if self.select:
            return self.options[int(self.default[0])]
        return self._number(self.default[0])

    def text(self, value: str | float) -> str:
        """The value as the browser writes it into the URL."""
        if self.select:
            return str(value)
        number = float(value)
        return str(int(number)) if number.is_integer() else repr(number)

    def parse(self, text: str) -> str | float:
        """The value a URL text names (the inverse of ``text``)."""
        return text if self.select else self._number(float(text))

    def state(self, value: str | float) -> WidgetState:
        """The widget state a browser sends after the student moves the slider to ``value``."""
        state = WidgetState(id=self.id)
        if self.select:
            state.string_array_value.data.append(str(value))
        else:
            state.double_array_value.data.append(float(value))
        return state


@dataclass
class Run:
    """What one script run sent to the client."""

    seconds: float = 0.0
    bytes: int = 0
    messages: int = 0
    session_id: str = ""
    page_script_hash: str = ""
    sliders: list[Slider] = field(default_factory=list)
    echoed: dict[str, list[str]] = field(default_factory=dict)  # slider id -> value the server set
    figures: list[str] = field(default_factory=list)  # plotly specs, in page order
    problems: list[str] = field(default_factory=list)  # exceptions, error boxes, compile errors

    @property
    def figure_digests(self) -> list[str]:
        """A short digest of each figure the run drew, in page order."""
        return [hashlib.sha256(spec.encode()).hexdigest()[:12] for spec in self.figures]

    @property
    def signature(self) -> str:
        """A digest of every figure the run drew: equal settings must draw equal figures."""
        digest = hashlib.sha256()
        for spec in self.figures:
            digest.update(hashlib.sha256(spec.encode()).digest())
        return digest.hexdigest()[:16]


class StreamlitClient:
    """One simulated browser tab on one page.

    ``http`` is a requests-like session (``get`` and ``cookies``); Locust's ``HttpSession`` works,
    and then ``request_names`` groups its requests in Locust's statistics.
    """

    def __init__(self, base_url: str, page: str, query: str = "", *, http=None, timeout: float = 60.0,
                 assets: bool = False, request_names: bool = False) -> None:
        import requests
        from requests.adapters import HTTPAdapter
        from urllib3.util.retry import Retry

        self.base_url = base_url.rstrip("/")
        self.page = page.strip("/")
        self.query: list[tuple[str, str]] = urllib.parse.parse_qsl(query, keep_blank_values=True)
        self.http = http if http is not None else requests.Session()
        # like a browser, send a GET again (once) when a reused keep-alive connection closed without
        # an answer; urllib3 logs each such retry ("Retrying ..."), and the runner counts them
        retry = Retry(total=1, connect=1, read=1, status=0, other=0, allowed_methods=["GET"], raise_on_status=False)
        for scheme in ("http://", "https://"):
            self.http.mount(scheme, HTTPAdapter(max_retries=retry))
        self.timeout = timeout
        self.assets = assets
        self.request_names = request_names
        self.widgets: dict[str, WidgetState] = {}
        self.page_script_hash = ""
        self.session_id = ""
        self._ws: websocket.WebSocket | None = None
        self._cache: dict[str, tuple[ForwardMsg, int]] = {}
        self._max_cache_age = 2
        self._runs = 0

    # -- HTTP and websocket --------------------------------------------------------------------
    def _get(self, path: str, name: str):
        extra = {"name": name} if self.request_names else {}
        response = self.http.get(f"{self.base_url}/{path}", timeout=self.timeout, **extra)
        if response.status_code != 200:
            raise ProtocolError(f"GET /{path} answered {response.status_code}")
        return response

    def open(self) -> Run:
        """Load the page as a browser does and return its first script run."""
        query = urllib.parse.urlencode(self.query)
        html = self._get(f"{self.page}?{query}" if query else self.page, "page (index.html)").text
        if self.assets:
            # a browser fetches the scripts and styles index.html names, six at a time
            with ThreadPoolExecutor(max_workers=6) as pool:
                list(pool.map(lambda asset: self._get(asset, "static assets"),
                              dict.fromkeys(ASSET_PATTERN.findall(html))))
        self._get("_stcore/health", "/_stcore/health")
        self._get("_stcore/host-config", "/_stcore/host-config")
        cookies = self.http.cookies
        xsrf = cookies.get(XSRF_COOKIE)
        cookie_header = "; ".join(f"{c.name}={c.value}" for c in cookies)
        self._ws = websocket.create_connection(
            self.base_url.replace("http", "ws", 1) + "/_stcore/stream",
            subprotocols=["streamlit", xsrf] if xsrf else ["streamlit"],
            header=[f"Cookie: {cookie_header}"] if cookie_header else [],
            origin=self.base_url, timeout=self.timeout, enable_multithread=False,
        )
        return self.rerun()

    def close(self) -> None:
        if self._ws is not None:
            try:
                self._ws.close()
            finally:
                self._ws = None

    def cookie(self, name: str) -> str | None:
        return self.http.cookies.get(name)

    # -- widgets -------------------------------------------------------------------------------
    def move(self, slider: Slider, value: str | float) -> Run:
        """Move ``slider`` to ``value`` as a student would: new widget state, URL updated, one rerun."""
        self.widgets[slider.id] = slider.state(value)
        if slider.key:
            self.query = [(k, v) for k, v in self.query if k != slider.key]
            if value != slider.default_value():
                self.query.append((slider.key, slider.text(value)))
        return self.rerun()

    def rerun(self) -> Run:
        if self._ws is None:
            raise ProtocolError("not connected")
        message = BackMsg()
        state = message.rerun_script
        state.query_string = urllib.parse.urlencode(self.query)
        if self.page_script_hash:
            state.page_script_hash = self.page_script_hash
        else:
            state.page_name = self.page
        state.widget_states.widgets.extend(self.widgets.values())
        state.cached_message_hashes.extend(self._cache)
        context = state.context_info
        context.timezone, context.timezone_offset, context.locale = "UTC", 0, "en-US"
        context.url, context.color_scheme = f"{self.base_url}/{self.page}", "light"
        self._runs += 1
        started = time.perf_counter()
        self._ws.send_binary(message.SerializeToString())
        run = self._read_until_finished(started)
        self._prune_cache()
        return run

    # -- reading -------------------------------------------------------------------------------
    def _read_until_finished(self, started: float) -> Run:
        run = Run()
        deadline = started + self.timeout
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise ProtocolError(f"no script_finished within {self.timeout:.0f} s")
            self._ws.settimeout(remaining)
            try:
                opcode, data = self._ws.recv_data()
            except websocket.WebSocketTimeoutException as err:
                raise ProtocolError(f"no script_finished within {self.timeout:.0f} s") from err
            except websocket.WebSocketConnectionClosedException as err:
                raise ProtocolError("the server closed the websocket") from err
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                raise ProtocolError("the server closed the websocket")
            if opcode != websocket.ABNF.OPCODE_BINARY:
                continue
            run.bytes += len(data)
            run.messages += 1
            msg = ForwardMsg()
            msg.ParseFromString(data)
            if msg.HasField("ref_hash"):
                cached = self._cache.get(msg.ref_hash)
                if cached is None:
                    raise ProtocolError(f"the server referenced a message this client never got ({msg.ref_hash})")
                self._cache[msg.ref_hash] = (cached[0], self._runs)
                msg = cached[0]
            elif msg.metadata.cacheable and msg.hash:
                self._cache[msg.hash] = (msg, self._runs)
            if self._handle(msg, run):
                run.seconds = time.perf_counter() - started
                run.session_id = self.session_id
                run.page_script_hash = self.page_script_hash
                return run

    def _handle(self, msg: ForwardMsg, run: Run) -> bool:
        """Record ``msg`` into ``run``; True once the script finished."""
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.session_id = msg.new_session.initialize.session_id or self.session_id
            age = msg.new_session.config.max_cached_message_age
            self._max_cache_age = age if age > 0 else self._max_cache_age
        elif kind == "navigation":
            self.page_script_hash = msg.navigation.page_script_hash or self.page_script_hash
        elif kind == "page_info_changed":
            self.query = urllib.parse.parse_qsl(msg.page_info_changed.query_string, keep_blank_values=True)
        elif kind == "session_event" and msg.session_event.HasField("script_compilation_exception"):
            run.problems.append("script compilation error: " + msg.session_event.script_compilation_exception.message)
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            self._element(msg.delta.new_element, run)
        elif kind == "script_finished":
            status = msg.script_finished
            if status == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                run.problems.append("the page did not compile")
                return True
            return status in (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
        return False

    @staticmethod
    def _element(element, run: Run) -> None:
        kind = element.WhichOneof("type")
        if kind == "slider":
            slider = Slider.from_proto(element.slider)
            run.sliders.append(slider)
            if element.slider.set_value:
                raw = list(element.slider.raw_value) or [slider.text(v) for v in element.slider.value]
                run.echoed[slider.id] = raw
        elif kind == "plotly_chart":
            run.figures.append(element.plotly_chart.spec)
        elif kind == "bidi_component":  # the app's charts (ui.chart): the figure travels as its payload
            run.figures.append(element.bidi_component.bytes.decode())
        elif kind == "exception":
            where = " <- ".join(line.strip() for line in reversed(element.exception.stack_trace[-6:]) if line.strip())
            run.problems.append(f"exception on the page: {element.exception.type}: {element.exception.message[:300]}"
                                + (f" (at {where})" if where else ""))
        elif kind == "alert" and element.alert.format == element.alert.ERROR:
            run.problems.append("error box on the page: " + element.alert.body[:200])

    def _prune_cache(self) -> None:
        """Forget cached messages no run used for ``max_cached_message_age`` runs, like the browser."""
        oldest = self._runs - self._max_cache_age
        for key in [k for k, (_, used) in self._cache.items() if used < oldest]:
            del self._cache[key]


def record_reference(base_url: str, page: str, *, timeout: float = 60.0) -> dict:
    """What a lone session sees: the page's first slider and a figure signature for each of its values.

    Recorded before any load, so no other session can have touched it; a load test then checks
    that every session, at every value, sees exactly these figures.
    """
    client = StreamlitClient(base_url, page, timeout=timeout)
    try:
        run = client.open()
        if not run.sliders:
            raise ProtocolError(f"the page {page!r} shows no slider")
        slider = run.sliders[0]
        if slider.dated or (not slider.select and slider.step <= 0):
            raise ProtocolError(f"the first slider of {page!r} is not a number or option slider")
        signatures: dict[str, str] = {}
        figures: dict[str, list[str]] = {}
        for value in slider.values():
            run = client.move(slider, value)
            if run.problems:
                raise ProtocolError(f"{slider.key}={slider.text(value)}: " + "; ".join(run.problems))
            signatures[slider.text(value)] = run.signature
            figures[slider.text(value)] = run.figure_digests
    finally:
        client.close()
    return {
        "page": page,
        "slider": {"id": slider.id, "key": slider.key, "label": slider.label},
        "values": list(signatures),
        "signatures": signatures,
        "distinct_signatures": len(set(signatures.values())),
        "figures": figures,  # each figure's digest, to say which figures a mismatching run changed
    }


def check_run(run: Run, reference: dict, value: str, session_id: str) -> tuple[list[str], bool]:
    """What in ``run`` is not this session's own state; and whether the server echoed the slider.

    ``value`` is the slider value (as URL text) this session set; ``reference`` comes from
    ``record_reference``. A run passes when it shows no error, the slider echo (if any) is
    ``value``, its figures are the lone session's figures for ``value``, and the session is the same.
    """
    problems = list(run.problems)
    slider = reference["slider"]
    echoed = run.echoed.get(slider["id"])
    if echoed is not None and echoed != [value]:
        problems.append(f"the slider shows {echoed}, this session set {value}")
    expected = reference["signatures"][value]
    if run.signature != expected:
        owner = next((v for v, s in reference["signatures"].items() if s == run.signature), None)
        shown = f"the figures of {slider['key']}={owner}" if owner else "figures no lone session drew"
        problems.append(f"{shown}, this session set {slider['key']}={value}")
    if run.session_id != session_id:
        problems.append(f"the session id changed from {session_id} to {run.session_id}")
    return problems, echoed is not None
