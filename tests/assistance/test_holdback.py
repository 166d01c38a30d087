"""The hold-back window: an agent without output checks streams its answer, and no part of a refused
match is ever streamed (the SSE body of the real stream endpoint, then the screen itself)."""

from __future__ import annotations

import asyncio
import html

import pytest

from app.extensions import db
from app.guards.credentials import save_credential
from app.runtime.guardrails import INSTRUCTION_WORDS, REFUSAL, OutputGuardrail
from app.runtime.holdback import TOKEN_CHARS, StreamScreen
from tests.chat_driver import chat_model, outcome, send, sse_events, start_chat, strip_tags
from tests.conftest import make_agent

SECRET = "ghp_7Hq2ZpL0vXw9Ks3Rt"
SPACED_SECRET = "k3y. 9Zp/Lx-4Wm+Rt8 q"  # words apart: only the character window holds it
INSTRUCTIONS = ("You are the billing desk of Acme. Never discuss the refund override code with anyone, and always "
                "ask for the invoice number before you look up a payment in the ledger.")
RUN = INSTRUCTIONS.replace(",", "").replace(".", "").split()[10:10 + INSTRUCTION_WORDS]
# 30 innocent words, none of them in INSTRUCTIONS, and no four characters of SECRET in a row.
INNOCENT = "".join(f"story{n} " for n in range(30))
KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz\n"
       "-----END OPENSSH PRIVATE KEY-----")
TOKEN = "sdk_" + "Ab3_-" * 8 + "xyz"


def paced(*chunks: str):
    """A stream function that yields the chunks a little apart, so the writer stores them one by one."""

    async def stream(messages, info):
        for chunk in chunks:
            await asyncio.sleep(0.06)
            yield chunk
    return stream


@pytest.fixture
def streamed(app, client, auth, scripted_model):
    """`streamed(*chunks)` runs one htmx turn of an agent without output checks whose model streams the
    chunks (its user has SECRET and SPACED_SECRET saved); returns the run, its message, the text streamed before the end
    (each text event's fragment, in order) and the end's fragment, from the SSE body of /runs/<id>/events."""
    user_id = auth.login_as("user")
    with app.app_context():
        save_credential(user_id, "github", SECRET)
        save_credential(user_id, "vault", SPACED_SECRET)
        db.session.commit()

    def chat(*chunks: str, instructions: str = INSTRUCTIONS):
        with app.app_context():
            agent_id = make_agent(instructions=instructions,
                                  model_config_id=chat_model(scripted_model, paced(*chunks))).id
        conversation_id = start_chat(app, client, agent_id)
        run, message = outcome(app, send(app, client, conversation_id, "Tell me"))
        events = sse_events(client.get(f"/runs/{run.id}/events").text)
        kinds = [event["event"] for event in events]
        assert kinds[-1] == "end" and "writing" not in kinds  # streamed, not held
        fragments = [html.unescape(strip_tags(event["data"])) for event in events if event["event"] == "text"]
        return run, message, fragments, events[-1]["data"]
    return chat


def leaked_prefix(streamed_text: str, secret: str) -> int:
    """The longest prefix of `secret` (four characters or more) found in the streamed text, or 0."""
    return max((n for n in range(4, len(secret) + 1) if secret[:n] in streamed_text), default=0)


def test_a_plain_answer_streams_in_several_text_events_before_the_end(streamed):
    answer = [f"word{n} " for n in range(40)] + ["The end."]
    run, message, fragments, end = streamed(*answer)
    assert run.status == "succeeded" and message.content == "".join(answer)
    assert len(fragments) > 2  # live: more than the window flushed with the end
    assert "".join(fragments) == message.content  # the window is flushed at the end: nothing lost, nothing twice
    assert "The end." in strip_tags(end)


@pytest.mark.parametrize(("secret", "instructions"), [(SECRET, INSTRUCTIONS), (SPACED_SECRET, ""),
                                                     (SPACED_SECRET, INSTRUCTIONS)],
                         ids=["one-word", "spaced-without-instructions", "spaced"])
def test_a_credential_streamed_character_by_character_never_streams_and_the_end_shows_the_refusal(
        streamed, secret, instructions):
    run, message, fragments, end = streamed(INNOCENT, *secret, " is your token.", instructions=instructions)
    assert run.status == "refused" and message.content == REFUSAL
    shown = "".join(fragments[:-1])  # the last text event is the refusal, stored with the end
    assert fragments[-1] == REFUSAL
    assert shown and INNOCENT.startswith(shown)  # the innocent prefix streamed live…
    assert leaked_prefix(shown, secret) == 0  # …and not four characters of the secret
    # The end replaces the live bubble (hx-swap outerHTML on the run's article) with the refusal only.
    assert REFUSAL in end and 'data-testid="run-refused"' in end and "story0" not in end


def test_an_instruction_run_streamed_word_by_word_never_streams_a_word_of_it(streamed):
    """Precisely: the streamed text before the refusal is a prefix of the innocent text, so not one word of
    the twelve (nor the space after the innocent text's last word, held with the words)."""
    run, message, fragments, end = streamed(INNOCENT, *(f"{word} " for word in RUN), "and more.")
    assert run.status == "refused" and fragments[-1] == REFUSAL
    shown = "".join(fragments[:-1])
    assert shown and INNOCENT.startswith(shown)
    assert not any(word.casefold() in shown.casefold() for word in RUN)
    assert REFUSAL in end and "story0" not in end


def test_eleven_instruction_words_then_another_stream_and_are_kept(streamed):
    """The edge: a run one word short is no copy, and the window lets it out whole."""
    eleven = [f"{word} " for word in RUN[:INSTRUCTION_WORDS - 1]]
    run, message, fragments, _end = streamed(INNOCENT, *eleven, "pineapple.")
    assert run.status == "succeeded"
    assert "".join(fragments) == message.content == INNOCENT + "".join(eleven) + "pineapple."


# The screen itself, fed one character at a time: what it lets out never holds a part of the match.

def screen(app, user_id: int | None = None, instructions: str = INSTRUCTIONS) -> StreamScreen:
    with app.app_context():
        return StreamScreen(OutputGuardrail(user_id, instructions))


def feed(screen: StreamScreen, text: str) -> str:
    return "".join(screen.feed(char) for char in text)


@pytest.mark.parametrize("secret", [TOKEN, KEY], ids=["api_token", "private_key"])
def test_the_screen_lets_out_no_part_of_a_token_or_a_private_key(app, secret):
    prose = "Here is what you asked for, as it appears in the file on the build machine: "
    guard = screen(app, instructions="")
    shown = feed(guard, prose + secret + " That is all.")
    assert guard.stopped and guard.rest() == ""
    assert shown and prose.startswith(shown)  # the prose before streamed; of the secret, not a character
    assert leaked_prefix(shown, secret) == 0 and "-" not in shown


def test_a_begin_line_that_is_no_private_key_is_let_out(app):
    text = "A certificate starts with -----BEGIN CERTIFICATE----- and a private key file with another line. " * 3
    guard = screen(app, instructions="")
    shown = feed(guard, text)
    assert not guard.stopped and len(shown) >= len(text) - guard.window
    assert shown + guard.rest() == text


def test_the_screen_holds_only_what_could_begin_a_match(app, auth):
    long_secret = "L0ng-" * 20  # 100 characters: the most the window may hold grows with it
    user_id = auth.login_as("user")
    with app.app_context():
        save_credential(user_id, "long", long_secret)
        db.session.commit()
    guard = screen(app, user_id)
    assert guard.window == len(long_secret) and TOKEN_CHARS < guard.window
    plain = "".join(f"word{n}, " for n in range(100))
    assert feed(guard, plain) == plain  # nothing in it could begin a match: it all went out at once
    assert feed(guard, "partial") == ""  # a word still being written waits for its end
    assert feed(guard, " Look: " + long_secret[:60]) == "partial Look: "  # the secret's beginning waits…
    assert feed(guard, "x and so on. ") == long_secret[:60] + "x and so on. "  # …until the text leaves it
    assert feed(guard, "Use sdk_Ab3") == "Use "  # a token's beginning
    assert feed(guard, " no. Sure: " + " ".join(RUN[:INSTRUCTION_WORDS - 1]) + " ") == "sdk_Ab3 no. Sure: "
    assert feed(guard, "pineapple. ") == " ".join(RUN[:INSTRUCTION_WORDS - 1]) + " pineapple. "
    assert feed(guard, "---") == "" and feed(guard, "--BEGIN RSA PRIV") == ""  # a key's label being written
    assert not guard.stopped and guard.rest() == "-----BEGIN RSA PRIV"
