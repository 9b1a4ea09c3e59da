"""One file from a Python package index, read through its simple API with the standard library.

For the corpus download when no pip can be run (a venv made with ``--without-pip`` or by uv). Only an
index the machine is configured with is used (``PIP_INDEX_URL``, ``UV_DEFAULT_INDEX``/``UV_INDEX_URL``,
or ``index-url`` in pip's configuration files, read in pip's order), so no host name lives in our code
and a mirror or proxy set up for pip is honoured; pip's ``cert`` setting is honoured too, and
credentials in the index URL are sent as HTTP basic auth to that host only. The caller verifies what
was downloaded against its pinned hash, so the index is trusted for nothing.
"""

from __future__ import annotations

import base64
import configparser
import json
import os
import re
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["Index", "PackageIndexError", "configured_index", "download", "find_file_url"]

_TIMEOUT_SECONDS = 60  # per connection and per read, not for the whole file
_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"


class PackageIndexError(Exception):
    """The index could not give the file; the message is one line."""


class Index(NamedTuple):
    url: str  # the simple API root, credentials removed
    source: str  # where the setting came from, for messages
    auth: str | None  # an Authorization header value for the index's host
    cert: str | None  # a CA bundle file, as pip's `cert` setting


def _pip_config_files() -> list[Path]:
    """pip's configuration files, lowest precedence first (global, user, site, then PIP_CONFIG_FILE)."""
    xdg_dirs = os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    files = [Path(folder) / "pip" / "pip.conf" for folder in reversed(xdg_dirs.split(os.pathsep)) if folder]
    files.append(Path("/etc/pip.conf"))
    home = Path.home()
    files.append(home / ".pip" / "pip.conf")
    files.append(Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "pip" / "pip.conf")
    files.append(Path(sys.prefix) / "pip.conf")
    explicit = os.environ.get("PIP_CONFIG_FILE")
    if explicit and explicit != os.devnull:
        files.append(Path(explicit))
    return files


def _pip_config(key: str) -> tuple[str, str] | None:
    """The value pip's files give ``key`` for ``pip download`` ([download] over [global]), and its file."""
    found: tuple[str, str] | None = None
    if os.environ.get("PIP_CONFIG_FILE") == os.devnull:
        return None  # pip's own switch for "read no configuration file"
    for path in _pip_config_files():
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error, UnicodeDecodeError):
            continue
        for section in ("global", "download"):
            if parser.has_option(section, key):
                found = (parser.get(section, key).strip(), str(path))
    return found


def configured_index() -> Index | None:
    """The index this machine is configured to download from, or ``None`` when none is set."""
    chosen: tuple[str, str] | None = None
    for variable in ("PIP_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        value = os.environ.get(variable, "").strip()
        if value:
            chosen = (value.split()[0], variable)
            break
    if chosen is None:
        chosen = _pip_config("index-url")
    if chosen is None or not chosen[0]:
        return None
    url, source = chosen
    cert = os.environ.get("PIP_CERT") or (_pip_config("cert") or ("", ""))[0] or None
    parts = urllib.parse.urlsplit(url)
    auth = None
    if parts.username is not None:
        user = urllib.parse.unquote(parts.username)
        password = urllib.parse.unquote(parts.password or "")
        auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        netloc = parts.hostname or ""
        if parts.port is not None:
            netloc += f":{parts.port}"
        url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return Index(url.rstrip("/") + "/", source, auth, cert)


def _normalized(project: str) -> str:
    return re.sub(r"[-_.]+", "-", project).lower()  # PEP 503


class _Links(HTMLParser):
    """The ``<a href>`` links of a PEP 503 project page, with their text (the file name)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.links.append((self._href, "".join(self._text).strip()))
            self._href = None


def _open(index: Index, url: str, accept: str) -> Any:
    request = urllib.request.Request(url, headers={"Accept": accept, "User-Agent": "template-analyzer"})
    same_host = urllib.parse.urlsplit(url).netloc == urllib.parse.urlsplit(index.url).netloc
    if index.auth is not None and same_host:
        request.add_header("Authorization", index.auth)
    context = ssl.create_default_context(cafile=index.cert) if index.cert else None
    try:
        return urllib.request.urlopen(request, timeout=_TIMEOUT_SECONDS, context=context)
    except urllib.error.HTTPError as exc:
        raise PackageIndexError(f"{_shown(url)} answered HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        raise PackageIndexError(f"cannot reach {_shown(url)}: {reason}") from None


def _shown(url: str) -> str:
    """A URL for messages: never with credentials."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def find_file_url(index: Index, project: str, filename: str) -> str:
    """The URL of ``filename`` on the index's page for ``project`` (JSON or HTML simple API)."""
    page = f"{index.url}{_normalized(project)}/"
    with _open(index, page, _ACCEPT) as response:
        kind = response.headers.get_content_type()
        base = response.geturl()
        body = response.read()
    try:
        if kind.endswith("json"):
            files = json.loads(body)["files"]
            links = [(str(item["url"]), str(item["filename"])) for item in files]
        else:
            parser = _Links()
            parser.feed(body.decode("utf-8", errors="replace"))
            links = parser.links
    except (ValueError, KeyError, TypeError) as exc:
        raise PackageIndexError(f"{_shown(page)} is not a simple-API project page ({exc})") from None
    for href, name in links:
        if name == filename:
            return str(urllib.parse.urljoin(base, href))
    raise PackageIndexError(f"{_shown(page)} lists no {filename}")


def download(index: Index, project: str, filename: str, dest: Path) -> None:
    """Write ``filename`` from the index to ``dest`` (the caller checks its hash)."""
    url = find_file_url(index, project, filename)
    with _open(index, url, "*/*") as response:
        try:
            with open(dest, "wb") as out:
                for block in iter(lambda: response.read(1 << 20), b""):
                    out.write(block)
        except OSError as exc:
            raise PackageIndexError(f"downloading {_shown(url)} failed: {exc.strerror or exc}") from None
