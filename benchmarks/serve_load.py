"""Load on ``template-analyzer serve``: concurrent clients for a fixed time, against serve and, for
comparison, against the same upstream's /completion directly; throughput and latency of both, and the
overhead our layer adds per request (p50, p99).

By default the upstream is a stand-in that answers at once (a llama-server /completion reply holding
one tool call), so what is measured is our layer: reading and checking the request, rendering the
prompt, building the grammar, posting upstream, parsing the reply. With --upstream it is a real
llama-server (give the --template its model carries): the model's time then dominates.

serve and the stand-in run in processes of their own; this process is the load (asyncio + httpx).

Usage:
    python3 benchmarks/serve_load.py [--clients 32] [--seconds 60] [--stream]
    python3 benchmarks/serve_load.py --llama-server PATH/TO/llama-server --seconds 20
    python3 benchmarks/serve_load.py --upstream http://127.0.0.1:8080 --template MODEL.gguf --seconds 20

--llama-server starts that binary with the tiny random model the end-to-end tests build for the
template (tests/e2e/tiny_model.py), one slot, and measures against it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the tiny model and the server process of the end-to-end tests

from analyzer import corpus  # noqa: E402  (after the path: run as a script from anywhere)
from analyzer.analysis import analyze  # noqa: E402
from analyzer.llama_server import ChatRequest, prepare  # noqa: E402
from analyzer.sources import load_template  # noqa: E402

DEFAULT_TEMPLATE = "Qwen-Qwen2.5-7B-Instruct.jinja"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
# The stand-in's reply: one call in Qwen 2.5's format (other templates read it as content).
REPLY = 'Let me check.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'


# --------------------------------------------------------------------------- the stand-in upstream


def _answer(body: dict[str, Any]) -> tuple[bytes, bytes]:
    final = {"content": REPLY, "stop": True, "stop_type": "eos", "tokens_evaluated": 40, "tokens_predicted": 30}
    if not body.get("stream"):
        return b"application/json", json.dumps({**final, "model": "stand-in"}).encode()
    pieces = [REPLY[i : i + 4] for i in range(0, len(REPLY), 4)]
    events = [{"content": piece, "stop": False} for piece in pieces] + [{**final, "content": ""}]
    return b"text/event-stream", b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


async def _stand_in_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """HTTP/1.1 with keep-alive, as much of it as a load test needs: POST with a Content-Length body."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = json.loads(await reader.readexactly(length)) if length else {}
            kind, data = _answer(body)
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s" % (kind, len(data), data)
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def _stand_in(port: int) -> None:
    server = await asyncio.start_server(_stand_in_connection, "127.0.0.1", port, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


# --------------------------------------------------------------------------- the load


async def _load(
    url: str, body: dict[str, Any], clients: int, seconds: float, *, direct: bool = False
) -> tuple[list[float], int]:
    """``clients`` loops posting ``body`` for ``seconds``; each request's latency, and the errors."""
    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds
    # Upstream as serve reaches it: a connection per request (llama-server gives each open connection
    # one of its few HTTP threads, so kept-alive connections would starve the other clients).
    keep = 0 if direct else clients
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=keep)
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:

        async def one_client() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                try:
                    response = await client.post(url, json=body)
                    await response.aread()
                    ok = response.status_code == 200 and b'"error"' not in response.content
                except httpx.HTTPError:
                    ok = False
                if ok:
                    latencies.append(time.perf_counter() - started)
                else:
                    errors += 1

        await asyncio.gather(*(one_client() for _ in range(clients)))
    return latencies, errors


def _summary(name: str, latencies: list[float], errors: int, seconds: float) -> dict[str, float]:
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [latencies[0]] * 99
    result = {"rps": len(latencies) / seconds, "p50": cuts[49] * 1000, "p99": cuts[98] * 1000}
    print(
        f"{name:<28} {len(latencies):>7} requests  {errors:>4} errors  {result['rps']:>8.1f} req/s  "
        f"p50 {result['p50']:>8.2f} ms  p99 {result['p99']:>8.2f} ms"
    )
    return result


def _wait_healthy(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"serve exited with {process.returncode}")
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("serve did not become healthy")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--template", default=None, help=f"template serve runs (default: the corpus's {DEFAULT_TEMPLATE})"
    )
    parser.add_argument("--upstream", default=None, help="a real llama-server (default: a stand-in answering at once)")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--stream", action="store_true", help="stream the replies (server-sent events)")
    parser.add_argument("--max-tokens", type=int, default=64, help="per request, with a real upstream")
    parser.add_argument("--llama-server", default=None, help="a llama-server binary to run the tiny model with")
    parser.add_argument("--stand-in", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stand_in is not None:
        asyncio.run(_stand_in(args.stand_in))
        return

    template_path = args.template or str(corpus.fetch() / DEFAULT_TEMPLATE)
    children: list[subprocess.Popen[bytes]] = []
    stop_llama_server = None
    try:
        upstream = args.upstream
        if args.llama_server is not None:
            llama_server = _tiny_llama_server(Path(args.llama_server), Path(template_path))
            stop_llama_server = llama_server.stop
            upstream = llama_server.url
        if upstream is None:
            port = _free_port()
            stand_in = subprocess.Popen([sys.executable, __file__, "--stand-in", str(port)], stdout=subprocess.PIPE)
            children.append(stand_in)
            assert stand_in.stdout is not None and stand_in.stdout.readline().strip() == b"ready"
            upstream = f"http://127.0.0.1:{port}"
        serve_port = _free_port()
        environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        serve = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "analyzer",
                "serve",
                template_path,
                "--upstream",
                upstream,
                "--port",
                str(serve_port),
                "--log-level",
                "warning",
            ],
            env=environment,
        )
        children.append(serve)
        serve_url = f"http://127.0.0.1:{serve_port}"
        _wait_healthy(serve_url, serve)

        template = load_template(template_path)
        request = ChatRequest(MESSAGES, [WEATHER], n_predict=args.max_tokens)
        direct = {**prepare(template, analyze(template), request).body, "stream": args.stream}
        ours = {
            "model": "m",
            "messages": MESSAGES,
            "tools": [WEATHER],
            "max_tokens": args.max_tokens,
            "stream": args.stream,
        }
        described = upstream
        if args.llama_server is not None:
            described = f"llama-server with the tiny model at {upstream}"
        elif args.upstream is None:
            described = "a stand-in answering at once"
        print(
            f"{args.clients} clients for {args.seconds:g} s each way, {'streamed' if args.stream else 'batch'}, "
            f"max_tokens {args.max_tokens}, upstream {described}"
        )
        upstream_result = _summary(
            "upstream /completion direct",
            *asyncio.run(_load(upstream + "/completion", direct, args.clients, args.seconds, direct=True)),
            args.seconds,
        )
        serve_result = _summary(
            "serve /v1/chat/completions",
            *asyncio.run(_load(serve_url + "/v1/chat/completions", ours, args.clients, args.seconds)),
            args.seconds,
        )
        print(
            f"overhead of serve per request: p50 {serve_result['p50'] - upstream_result['p50']:+.2f} ms, "
            f"p99 {serve_result['p99'] - upstream_result['p99']:+.2f} ms "
            f"(latency under {args.clients} concurrent clients)"
        )
    finally:
        for child in children:
            child.terminate()
            child.wait(30)
        if stop_llama_server is not None:
            stop_llama_server()


def _tiny_llama_server(binary: Path, template_path: Path) -> Any:
    """llama-server running the end-to-end tests' tiny model for the template (its markers as special
    tokens), in a temporary folder."""
    import tempfile

    from tests.e2e.server import Server, special_pieces, vocab_gguf
    from tests.e2e.tiny_model import build_model

    template = load_template(str(template_path))
    body = prepare(template, analyze(template), ChatRequest(MESSAGES, [WEATHER])).body
    vocab = vocab_gguf(binary)
    if vocab is None:
        raise SystemExit(f"no ggml-vocab-qwen2.gguf beside {binary}")
    folder = Path(tempfile.mkdtemp(prefix="serve-load-"))
    build_model(vocab, folder / "model.gguf", special_pieces(body["preserved_tokens"]), template.source)
    return Server(binary, folder / "model.gguf", template_path, folder / "server.log")


if __name__ == "__main__":
    main()
