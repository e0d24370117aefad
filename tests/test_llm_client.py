"""The chat client against a real HTTP server on 127.0.0.1: answers, retries with backoff,
timeouts, servers without structured output, model discovery."""

from __future__ import annotations

import time

import pytest
from ascendcraft.search.llm.client import ChatClient, LlmRequestError
from ascendcraft.search.llm.config import LlmConfig, from_environment
from ascendcraft.search.llm.extract import SCHEMA
from llm_server import Reply, ScriptedServer

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]


def client(srv: ScriptedServer, **kw) -> ChatClient:
    cfg = dict(base_url=srv.base_url, timeout_s=5.0, retries=3, backoff_s=0.05, backoff_cap_s=1.0)
    cfg.update(kw)
    return ChatClient(LlmConfig(**cfg))


def test_a_good_answer_with_its_tokens_and_structured_output() -> None:
    with ScriptedServer([Reply('{"candidates": []}', prompt_tokens=11, completion_tokens=7)]) as srv:
        reply = client(srv).complete("m", MESSAGES, SCHEMA)
    assert reply.text == '{"candidates": []}'
    assert (reply.prompt_tokens, reply.completion_tokens, reply.retries) == (11, 7, 0)
    assert reply.structured is True
    body = srv.chats[0]
    assert body["model"] == "m" and body["messages"] == MESSAGES
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA


def test_429_and_500_are_retried_with_growing_waits() -> None:
    script = [Reply("slow down", status=429), Reply("oops", status=500),
              Reply("boom", status=503), Reply("fine")]
    with ScriptedServer(script) as srv:
        reply = client(srv, backoff_s=0.1).complete("m", MESSAGES)
    assert reply.text == "fine" and reply.retries == 3
    times = [r["t"] for r in srv.requests]
    assert len(times) == 4  # the server saw every retry
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    # exponential backoff from 0.1 s: >= 0.1, 0.2, 0.4 (plus jitter)
    assert gaps[0] >= 0.1 and gaps[1] >= 0.2 and gaps[2] >= 0.4, gaps


def test_retry_after_is_honoured_and_retries_are_bounded() -> None:
    with ScriptedServer([Reply("busy", status=429, headers={"Retry-After": "0.3"})]) as srv:
        t0 = time.monotonic()
        with pytest.raises(LlmRequestError) as err:
            client(srv, retries=2, backoff_s=0.01).complete("m", MESSAGES)
        took = time.monotonic() - t0
    assert len(srv.chats) == 3  # one try and two retries, then it gives up
    assert err.value.retries == 2
    assert "HTTP 429" in str(err.value) and "after 2 retries" in str(err.value)
    assert took >= 0.6  # waited what Retry-After said, twice


def test_a_client_error_is_not_retried() -> None:
    with ScriptedServer([Reply("bad key", status=401)]) as srv:
        with pytest.raises(LlmRequestError, match="HTTP 401"):
            client(srv).complete("m", MESSAGES)
    assert len(srv.chats) == 1


def test_a_slow_answer_past_the_timeout_fails_readably() -> None:
    with ScriptedServer([Reply("too late", delay_s=1.5)]) as srv:
        t0 = time.monotonic()
        with pytest.raises(LlmRequestError) as err:
            client(srv, timeout_s=0.3, retries=1, backoff_s=0.01).complete("m", MESSAGES)
        took = time.monotonic() - t0
    assert "timed out" in str(err.value) and err.value.retries == 1
    assert len(srv.chats) == 2
    assert took < 1.5  # it did not wait for the slow answer


def test_a_server_without_structured_output_is_asked_plainly_once_and_remembered() -> None:
    script = [Reply("first", refuse_schema=True), Reply("second", refuse_schema=True)]
    with ScriptedServer(script) as srv:
        c = client(srv)
        first = c.complete("m", MESSAGES, SCHEMA)
        second = c.complete("m", MESSAGES, SCHEMA)
    assert (first.text, second.text) == ("first", "second")
    assert first.structured is False and second.structured is False
    assert c.structured_ok is False
    assert srv.refused_schema == 1  # the second question went out without response_format
    assert ["response_format" in b for b in srv.chats] == [True, False, False]


def test_the_model_is_the_servers_only_one_or_must_be_named() -> None:
    with ScriptedServer([Reply("x")], models=["only-one"]) as srv:
        assert client(srv).resolve_model() == "only-one"
    with ScriptedServer([Reply("x")], models=["a", "b"]) as srv:
        with pytest.raises(LlmRequestError, match="offers 2 models .*--model"):
            client(srv).resolve_model()
        assert client(srv, model="b").resolve_model() == "b"


def test_an_unreachable_server_is_one_sentence() -> None:
    with ScriptedServer([Reply("x")]) as srv:
        url = srv.base_url
    with pytest.raises(LlmRequestError, match="cannot reach the server"):
        ChatClient(LlmConfig(base_url=url, retries=1, backoff_s=0.01, timeout_s=2)).complete(
            "m", MESSAGES)


def test_the_endpoint_comes_from_the_environment_and_the_key_stays_out_of_repr() -> None:
    cfg = from_environment({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-x"})
    assert cfg.base_url == "http://127.0.0.1:9/v1" and cfg.has_endpoint
    assert "sk-x" not in repr(cfg)
    given = from_environment({"OPENAI_BASE_URL": "http://a/v1"}, base_url="http://b/v1")
    assert given.base_url == "http://b/v1"
    assert not from_environment({}).has_endpoint
