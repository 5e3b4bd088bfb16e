"""``ctxscope proxy``: a reverse proxy for the Anthropic Messages API on 127.0.0.1 that passes
every request through unchanged and records the Messages requests and their answers exactly
(docs/proxy.md). :mod:`~engine.proxy.server` forwards, :mod:`~engine.proxy.stream` reassembles
a streamed answer, :mod:`~engine.proxy.identity` tells which conversation a request belongs
to, :mod:`~engine.proxy.recorder` stores it off the forwarding path, and
:mod:`~engine.proxy.report` shows the stored requests as a context."""
