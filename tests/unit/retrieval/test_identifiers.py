"""Identifier splitting used for the FTS column and for embedding-text preparation."""

import pytest

from codecompass.common.identifiers import (
    identifier_parts,
    split_identifiers,
)


def test_contract_example():
    assert split_identifiers("validateJwtToken parse_http_url HTTPServer2") == (
        "validateJwtToken validate jwt token parse_http_url parse http url HTTPServer2 http server 2"
    )


@pytest.mark.parametrize(
    ("token", "parts"),
    [
        ("validateToken", ["validate", "token"]),
        ("XMLHttpRequest", ["xml", "http", "request"]),
        ("parseHTTPResponse", ["parse", "http", "response"]),
        ("base64Encode", ["base", "64", "encode"]),
        ("MAX_RETRY_COUNT", ["max", "retry", "count"]),
        ("__proto__", ["proto"]),
        ("$scope", ["scope"]),
        ("useState", ["use", "state"]),
        ("token", ["token"]),
    ],
)
def test_identifier_parts(token, parts):
    assert identifier_parts(token) == parts


def test_plain_words_are_not_repeated():
    assert split_identifiers("find the Token") == "find the Token"


def test_punctuation_separates_and_is_dropped():
    assert split_identifiers("function getUser(id: string): User {") == ("function getUser get user id string User")


def test_leading_underscores_and_dollar_keep_original_and_add_word():
    assert split_identifiers("_private $el") == "_private private $el el"


def test_empty_and_symbol_only_text():
    assert split_identifiers("") == ""
    assert split_identifiers("=> {} ();") == ""


def test_deterministic():
    text = "class AuthService { validateJwtToken(t) { return jwt_verify(t) } }"
    assert split_identifiers(text) == split_identifiers(text)


@pytest.mark.parametrize(
    ("token", "parts"),
    [
        ("рассчитатьСкидку", ["рассчитать", "скидку"]),
        ("ÄpfelBirnen", ["äpfel", "birnen"]),
        ("función_válida", ["función", "válida"]),
        ("de\u0301ja\u0300Vu", ["de\u0301ja\u0300", "vu"]),  # decomposed accents stay in their word
        ("購物車", ["購物車"]),  # a script without case is one part
        ("ΣύνολοΤιμής2", ["σύνολο", "τιμής", "2"]),
    ],
)
def test_identifiers_in_other_scripts_split_by_the_same_rule(token, parts):
    assert identifier_parts(token) == parts


def test_words_of_every_script_reach_the_full_text_column():
    # The full-text column and the query are both made by split_identifiers: a word it drops can
    # never match (a Cyrillic name was unsearchable by both searches).
    assert split_identifiers("export function рассчитатьСкидку(сумма) { return 購物車.加入商品(x) }") == (
        "export function рассчитатьСкидку рассчитать скидку сумма return 購物車 加入商品 x"
    )
