"""The one place a query's shape is judged: intent, identifiers, words, path, phrase."""

import pytest

from codecompass.policy.shape import (
    ERROR,
    MAX_QUERY_CHARS,
    NATURAL_LANGUAGE,
    PATH,
    SYMBOL,
    analyze,
    is_code_shaped,
    length_problem,
)


@pytest.mark.parametrize("token", ["validateToken", "AuthHandler", "parse_url", "auth.validateToken", "getUser(id)",
                                   "$scope"])
def test_code_shaped_tokens(token):
    assert is_code_shaped(token)


@pytest.mark.parametrize("token", ["token", "HTTP", "", "  ", "where", "Token"])
def test_words_are_not_code_shaped(token):
    assert not is_code_shaped(token)


@pytest.mark.parametrize(
    ("query", "intent"),
    [
        ("validateToken", SYMBOL),
        ("Foo.bar", SYMBOL),
        ("parse_url()", SYMBOL),
        ("getUser(id)", SYMBOL),
        ("session", SYMBOL),
        ("operators/mergeMap.ts", PATH),
        ("retry.js", PATH),
        ("locales/fi.ts", PATH),
        ("where is the retry delay computed", NATURAL_LANGUAGE),
        ("fix crash when the config file is empty", NATURAL_LANGUAGE),
        ("Cannot read properties of undefined", ERROR),
        ('throws "timeout exceeded" sometimes', ERROR),
        ("TypeError: x is not a function", ERROR),
    ],
)
def test_intent(query, intent):
    assert analyze(query).intent == intent


def test_identifiers_keep_case_and_add_the_last_segment():
    assert analyze("Foo.bar").identifiers == ("Foo.bar", "bar")
    assert analyze("getUser(id)").identifiers == ("getUser",)
    # English words in a sentence are not identifiers; code-shaped ones are.
    assert analyze("why does validateToken reject expired tokens").identifiers == ("validateToken",)
    assert analyze("where is the token checked").identifiers == ()


@pytest.mark.parametrize("query", ["validateToken", "Foo.bar", "getUser(id)", "useState useEffect", "session"])
def test_a_query_of_names_only_is_a_name_lookup(query):
    assert analyze(query).name_lookup


@pytest.mark.parametrize("query", ["closingNotifier should support ObservableInput",
                                   "allow interceptors without opts.origin", "where is the token checked",
                                   "retry.js", "TypeError: x is not a function"])
def test_a_sentence_that_mentions_a_name_is_not_a_name_lookup(query):
    # Short sentences with a code-shaped word read as SYMBOL intent, but a name in them no chunk
    # has (an option, a property) is one word among others, not the whole question.
    assert not analyze(query).name_lookup


def test_words_split_identifiers_and_drop_stop_words():
    assert analyze("where is the retryDelay computed").words == ("retry", "delay", "computed")


def test_path_is_normalised_and_not_an_identifier():
    shape = analyze("./src/utils/retry.js")
    assert shape.path == "src/utils/retry.js"
    assert shape.identifiers == ()


def test_phrase_of_quoted_text_and_messages():
    assert analyze('error "connection refused" on start').phrase == "connection refused"
    assert analyze("Expected a function.").phrase == "Expected a function"
    assert analyze("how are retries scheduled").phrase == ""


def test_mentions_tests():
    assert analyze("add tests for the retry helper").mentions_tests
    assert not analyze("retry helper").mentions_tests


def test_empty_query_is_natural_language_with_no_confidence():
    shape = analyze("   ")
    assert shape.intent == NATURAL_LANGUAGE and shape.intent_confidence == 0.0


def test_lexical_text_drops_request_words_from_natural_language_only():
    assert analyze("fix crash when the config file is empty").lexical_text == "crash when the config file is empty"
    assert analyze("handleRequest").lexical_text == "handleRequest"
    # Nothing left would mean searching nothing: keep the query.
    assert analyze("how to fix").lexical_text == "how to fix"


def test_name_parts_keep_stop_words():
    shape = analyze("element at function")
    assert shape.words == ("element", "function")
    assert shape.name_parts == ("element", "at", "function")


def test_a_query_longer_than_the_limit_is_refused_with_both_lengths() -> None:
    assert length_problem("x" * MAX_QUERY_CHARS) is None
    assert length_problem("x" * 200_000) == ("query too long: 200,000 characters (the limit is 10,000); "
                                             "search with the lines that matter")


def test_words_without_letters_or_digits_are_natural_language() -> None:
    # Symbols only ("§§§ ¶¶ †††"): no word to judge a message by, and no traceback.
    shape = analyze("§§§ ¶¶ †††")
    assert shape.intent == NATURAL_LANGUAGE and shape.words == ()


@pytest.mark.parametrize(("query", "question"), [
    ("how does the router discover plugins", True),
    ("Where is the token validated?", True),
    ("retry failed jobs?", True),
    ("retry failed jobs", False),
    ("parseConfig", False),
    ("", False),
])
def test_a_question_in_words_is_judged_once(query, question):
    assert analyze(query).question is question
