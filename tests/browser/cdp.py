"""Headless Chromium driven over the DevTools protocol, with nothing but the standard library.

A minimal WebSocket client (RFC 6455: text frames, masked from the client, ping and
close) carries the protocol's JSON messages. Chromium is started offline: every host
name but 127.0.0.1 fails to resolve, so a page that needs the network shows it.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")


class WebSocket:
    def __init__(self, host: str, port: int, path: str, timeout: float = 60):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the browser closed the connection during the handshake")
            reply += chunk
        head, self.buffer = reply.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"the browser refused the WebSocket: {head.decode(errors='replace')}")

    def _read(self, count: int) -> bytes:
        while len(self.buffer) < count:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the browser closed the connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def _send_frame(self, opcode: int, payload: bytes):
        header = bytes([0x80 | opcode])
        length = len(payload)
        if length < 126:
            header += bytes([0x80 | length])
        elif length < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack("!H", length)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", length)
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send(self, text: str):
        self._send_frame(0x1, text.encode())

    def receive(self) -> str:
        message = b""
        while True:
            first, second = self._read(2)
            opcode, length = first & 0x0F, second & 0x7F
            if length == 126:
                (length,) = struct.unpack("!H", self._read(2))
            elif length == 127:
                (length,) = struct.unpack("!Q", self._read(8))
            mask = self._read(4) if second & 0x80 else None
            payload = self._read(length)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x9:
                self._send_frame(0xA, payload)
            elif opcode == 0x8:
                raise ConnectionError("the browser closed the WebSocket")
            elif opcode in (0x0, 0x1, 0x2):
                message += payload
                if first & 0x80:
                    return message.decode()

    def close(self):
        self.sock.close()


class Browser:
    """One headless Chromium with one page (a flattened DevTools session)."""

    def __init__(self, chromium: Path = CHROMIUM):
        self.profile = tempfile.mkdtemp(prefix="course-chromium-")
        command = [str(chromium), "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                   "--remote-debugging-port=0", f"--user-data-dir={self.profile}", "--window-size=1200,900",
                   # Offline: only the site on 127.0.0.1 can be reached.
                   "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
        if os.geteuid() == 0:
            command.append("--no-sandbox")  # Chromium's sandbox refuses to run as root, as CI does.
        self.process = subprocess.Popen([*command, "about:blank"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        port, path = self._devtools_address()
        self.ws = WebSocket("127.0.0.1", port, path)
        self.next_id = 0
        self.events: list[dict] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)

    def _devtools_address(self, timeout: float = 30):
        active = Path(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with status {self.process.returncode}")
            lines = active.read_text().split("\n") if active.is_file() else []
            if len(lines) >= 2 and lines[1]:
                return int(lines[0]), lines[1]
            time.sleep(0.05)
        raise TimeoutError("chromium did not open its DevTools port")

    def call(self, method: str, session: bool = False, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        self.ws.send(json.dumps(message))
        while True:
            reply = json.loads(self.ws.receive())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 60) -> dict:
        """The next event named ``method`` (events already queued are searched first)."""
        deadline = time.monotonic() + timeout
        while True:
            for index, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(index)
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} within {timeout} s")
            self.events.append(json.loads(self.ws.receive()))

    def open(self, url: str) -> list[dict]:
        """Load ``url``; return the events of the load (console, exceptions, network)."""
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("Page.loadEventFired")
        # Let deferred scripts and images finish before the page is read.
        self.evaluate("Promise.all([document.fonts.ready, ...Array.from(document.images, i => i.complete ? 0 :"
                      " new Promise(done => { i.onload = i.onerror = done; }))])")
        self.evaluate("new Promise(done => setTimeout(done, 200))")
        load, self.events = self.events, []
        return load

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", session=True, expression=expression, awaitPromise=True,
                           returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"the page's script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path):
        data = self.call("Page.captureScreenshot", session=True, captureBeyondViewport=True)["data"]
        Path(path).write_bytes(base64.b64decode(data))

    def close(self):
        try:
            self.call("Browser.close")
        except (ConnectionError, OSError):
            pass
        self.ws.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.profile, ignore_errors=True)
