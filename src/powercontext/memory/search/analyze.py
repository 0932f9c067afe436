"""Stage 1: the analyzer. Text and queries become the same kind of tokens.

Casefolded word tokens, Snowball-stemmed by configuration; runs of CJK characters (which carry
no spaces) become character unigrams and bigrams so Chinese and Japanese match without a
dictionary. The full-text channel indexes exactly these tokens, so index and query agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import Stemmer

from powercontext.memory.search.marks import COMBINING_MARKS

_CJK = (
    "\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f"
)
# A word: letters and digits, with the combining marks that follow them inside it (vowel signs,
# viramas, points: `\w` alone cut "नमस्ते" into "नमस" and "त"). A mark that follows no letter
# is not a word.
_WORD = rf"[^\W_{_CJK}]+(?:[{COMBINING_MARKS}]+[^\W_{_CJK}]*)*"
_TOKEN = re.compile(rf"([{_CJK}]+)|({_WORD})")
MAX_TOKEN_CHARS = 64
# English clitics after an apostrophe ("Caroline's", "don't", "we're"): without this they
# become the one- or two-letter tokens s, t, re... that match nearly every entry and count
# as matched terms in admission.
_ENGLISH_CLITIC = re.compile(r"(?<=[^\W\d_])['\u2019](?:s|t|re|ve|ll|d|m)\b", re.IGNORECASE)
_CLITIC_LANGUAGES = frozenset({"english", "porter"})

# A short list of function words; queries drop them only when `drop_query_stopwords` is on.
ENGLISH_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves
    """.split()
)


@dataclass(frozen=True, slots=True)
class AnalyzerConfig:
    language: str | None = "english"
    """Snowball stemmer language, or None for no stemming."""
    drop_query_stopwords: bool = False
    stopwords: frozenset[str] = field(default=ENGLISH_STOPWORDS)
    strip_clitics: bool = False
    """Drop English clitics ('s, 't, 're, 've, 'll, 'd, 'm) before tokenizing, for the
    english and porter stemmers only; index and query are treated alike."""


@lru_cache(maxsize=8)
def _stemmer(language: str) -> Stemmer.Stemmer:
    return Stemmer.Stemmer(language)


def _cjk_grams(run: str) -> list[str]:
    grams = list(run)
    grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return grams


def _raw_tokens(text: str, config: AnalyzerConfig) -> tuple[list[str], list[str]]:
    words: list[str] = []
    cjk: list[str] = []
    if config.strip_clitics and config.language in _CLITIC_LANGUAGES:
        text = _ENGLISH_CLITIC.sub("", text)
    for match in _TOKEN.finditer(text.casefold()):
        run_cjk, word = match.groups()
        if run_cjk:
            cjk.extend(_cjk_grams(run_cjk))
        else:
            words.append(word[:MAX_TOKEN_CHARS])
    return words, cjk


def _stem(words: list[str], config: AnalyzerConfig) -> list[str]:
    if config.language is None or not words:
        return words
    stemmed: list[str] = _stemmer(config.language).stemWords(words)
    return stemmed


def analyze(text: str, config: AnalyzerConfig = AnalyzerConfig()) -> list[str]:
    """Every token of `text`, in order, with repeats (term frequency matters to BM25)."""
    words, cjk = _raw_tokens(text, config)
    return _stem(words, config) + cjk


def index_tokens(text: str, config: AnalyzerConfig = AnalyzerConfig()) -> str:
    return " ".join(analyze(text, config))


def surface_words(text: str, config: AnalyzerConfig = AnalyzerConfig()) -> list[str]:
    """The casefolded, unstemmed words of `text` (no CJK grams): what query rules read."""
    return _raw_tokens(text, config)[0]


def query_terms(query: str, config: AnalyzerConfig = AnalyzerConfig()) -> tuple[str, ...]:
    """Distinct query terms in first-seen order.

    Stop words are dropped only when configured, and never when nothing else would remain.
    """
    words, cjk = _raw_tokens(query, config)
    if config.drop_query_stopwords:
        content = [w for w in words if w not in config.stopwords]
        if content or cjk:
            words = content
    return tuple(dict.fromkeys(_stem(words, config) + cjk))
