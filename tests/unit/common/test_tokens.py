import subprocess
import sys

from codecompass.common.tokens import count_tokens


def _reference(text: str) -> int:
    # bpe-openai's own wrapper, whole (its first attribute read runs the package's `__init__`).
    import bpe_openai

    return len(bpe_openai.get_encoding("cl100k_base").encode_ordinary(text))


def test_counts_match_cl100k_base():
    # Reference counts from the analysis service's tokenizer (js-tiktoken cl100k_base).
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens("async validateToken(token: string): Promise<JwtPayload | null> {\n"
                        "  return jwt.verify(token)\n}") == 22


def test_special_token_spellings_and_lone_surrogates_are_ordinary_text():
    # As the analysis service counts them (reference counts from node_ts_service/src/tokens.ts).
    assert count_tokens('const marker = "<|endoftext|>";\n') == 10
    assert count_tokens("x <|endoftext|> y") == 8
    assert count_tokens("a\ud800b") == 3


def test_non_ascii_and_long_text():
    assert count_tokens("naïve café 日本語") > 0
    assert count_tokens("x = 1;\n" * 10_000) >= 10_000


def test_texts_past_the_wrappers_limit_are_counted_whole():
    line = "const value_" + "x" * 40 + " = computeSomething(alpha, beta, gamma);\n"
    text = line * 30_000  # ~2.8M characters, far over 200,000 tokens
    one = count_tokens(line)
    assert count_tokens(text) == one * 30_000


def test_a_long_text_is_counted_exactly():
    # Runs of blank and whitespace-only lines are whitespace tokens a cut would split; selection's
    # stored renderings must count what the analysis service counts (node_ts_service/src/tokens.ts
    # is exact).
    block = "  if (x) {\n    y();\n\n    \n\t\n  }\n" + "        \n" * 7 + "\n"
    text = "function f() {\n" + block * 4_000 + "}"
    assert len(text) > 100_000
    assert count_tokens(text) == _reference(text)


def test_counts_equal_the_wrappers_on_code_prose_and_odd_text():
    texts = ["export const x = 1;\n", "naïve café 日本語 😀 \u200b", "\x00\x01binary\x7f", "<|fim_prefix|> a",
             "    \t\n\n  \n", "a" * 5_000, "function f(a, b) {\n  return a?.b ?? `${b}`;\n}\n" * 200]
    assert [count_tokens(t) for t in texts] == [_reference(t) for t in texts]


def test_counting_loads_only_the_tokenizer_extension():
    code = ("import sys\nfrom codecompass.common.tokens import count_tokens\n"
            "print(count_tokens('hello world'), 'bpe_openai.compat' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["2", "False"]
