"""An experiment, not a feature: irregular English verbs indexed and searched as their base form.

LoCoMo's questions ask "what did X buy / win / write" while the turns say "bought", "won",
"wrote"; a Snowball stemmer leaves those apart. This maps the past forms of about 150 common
irregular verbs to the base form before stemming, in entries and questions alike, and runs the
turn-by-turn ablation of the defaults with it (the analyzer is patched in this process only):

    python bench/locomo_irregular_verbs.py --out RUN_DIR --results locomo_irregular_verbs

Every other argument goes to locomo_ablation.py (`--variant defaults` is the default). Copy an
earlier run's `embedding-cache.sqlite` into RUN_DIR first and no text is embedded again: the
mapping changes tokens, not what the vector channel embeds.

Forms that are mostly another word in conversation (rose, left, ground, bound, born...) and
the auxiliaries (was, did, had: query stop words anyway) are not mapped.
"""

from __future__ import annotations

import sys
from pathlib import Path

from powercontext.memory.search import analyze

BENCH = Path(__file__).resolve().parent

_VERBS = """
arise arose arisen|awake awoke awoken|beat beaten|become became|begin began begun|bend bent|
bite bit bitten|bleed bled|blow blew blown|break broke broken|breed bred|bring brought|
build built|burn burnt|buy bought|catch caught|choose chose chosen|cling clung|come came|
creep crept|deal dealt|dig dug|draw drew drawn|dream dreamt|drink drank drunk|
drive drove driven|eat ate eaten|fall fell fallen|feed fed|feel felt|fight fought|find found|
flee fled|fly flew flown|forbid forbade forbidden|forget forgot forgotten|
forgive forgave forgiven|freeze froze frozen|get got gotten|give gave given|go went gone|
grow grew grown|hang hung|hear heard|hide hid hidden|hold held|keep kept|kneel knelt|
know knew known|lead led|lean leant|leap leapt|learn learnt|leave|lend lent|lose lost|
make made|mean meant|meet met|pay paid|ride rode ridden|ring rang rung|rise risen|run ran|
say said|see saw seen|seek sought|sell sold|send sent|sew sewn|shake shook shaken|shine shone|
shoot shot|show shown|shrink shrank shrunk|sing sang sung|sink sank sunk|sit sat|sleep slept|
slide slid|speak spoke spoken|speed sped|spend spent|spill spilt|spin spun|spit spat|
spring sprang sprung|stand stood|steal stole stolen|stick stuck|sting stung|stink stank stunk|
strike struck|strive strove striven|swear swore sworn|sweep swept|swim swam swum|swing swung|
take took taken|teach taught|tear tore torn|tell told|think thought|throw threw thrown|
understand understood|wake woke woken|wear wore worn|weave wove woven|weep wept|win won|
write wrote written|overcome overcame|undergo underwent undergone|withdraw withdrew withdrawn|
mistake mistook mistaken
"""
BASE_FORMS = {
    form: group.split()[0]
    for group in _VERBS.replace("\n", "").split("|")
    for form in group.split()[1:]
}

_stem = analyze._stem


def _stem_base_forms(words: list[str], config: analyze.AnalyzerConfig) -> list[str]:
    if config.language in ("english", "porter"):
        words = [BASE_FORMS.get(word, word) for word in words]
    return _stem(words, config)


def main() -> None:
    analyze._stem = _stem_base_forms  # type: ignore[assignment]
    sys.path.insert(0, str(BENCH))
    import locomo_ablation

    locomo_ablation.run_experiment(sys.argv[1:])


if __name__ == "__main__":
    main()
