"""Fixtures for the proxy tests: the fake Messages API as the upstream, a proxy in front of it
recording into a database in ``tmp_path``, and SDK clients to either."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest

from engine.proxy.recorder import Recorder
from engine.proxy.server import Proxy, ProxyConfig, ProxyThread
from tests.fakes.anthropic_server import (
    FAKE_API_KEY,
    FakeAnthropicServer,
    fake_anthropic,  # noqa: F401  (the fixture)
)


class RunningProxy:
    """A proxy listening in a thread; ``stop()`` waits for its records to be stored."""

    def __init__(
        self,
        upstream: str,
        db: Path | str,
        max_body: int | None = None,
        record_limit: int | None = None,
    ) -> None:
        self.db = db
        self.recorder = Recorder(db)
        config = ProxyConfig(upstream=upstream, port=0)
        if max_body is not None:
            config.max_body = max_body
        if record_limit is not None:
            config.record_limit = record_limit
        self.proxy = Proxy(config, self.recorder)
        self._thread = ProxyThread(self.proxy).start()
        self.stopped = False

    @property
    def url(self) -> str:
        return self.proxy.url

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self._thread.stop()


@pytest.fixture
def proxy(fake_anthropic: FakeAnthropicServer, tmp_path: Path) -> Iterator[RunningProxy]:  # noqa: F811
    running = RunningProxy(fake_anthropic.url, tmp_path / "proxy.db")
    try:
        yield running
    finally:
        running.stop()


def client(base_url: str, **options: object) -> anthropic.Anthropic:
    """The real SDK, no retries (a test sees each answer as the upstream gave it)."""
    options.setdefault("api_key", FAKE_API_KEY)
    return anthropic.Anthropic(base_url=base_url, max_retries=0, **options)  # type: ignore[arg-type]
