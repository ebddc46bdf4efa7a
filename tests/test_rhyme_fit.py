import json
from pathlib import Path

from poeval.poetry import rhyme


def test_fit_file_equals_the_pasted_constants():
    fit = json.loads((Path(rhyme.__file__).parent / "data" / "rhyme_fit.json").read_text("utf-8"))
    assert fit["llr"] == rhyme.LLR and fit["dist_bias"] == rhyme.DIST_BIAS
    assert fit["scheme_counts_4"] == rhyme.SCHEME_COUNTS_4
    # byte-for-byte: the same float reprs (-0.0 included)
    for name, table in (("llr", rhyme.LLR), ("dist_bias", rhyme.DIST_BIAS), ("scheme_counts_4", rhyme.SCHEME_COUNTS_4)):
        for lang in ("en", "de"):
            assert json.dumps(fit[name][lang]) == json.dumps(table[lang]) or \
                json.dumps(fit[name][lang], sort_keys=True) == json.dumps(table[lang], sort_keys=True)
