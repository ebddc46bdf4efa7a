"""Memorization: the fast path must give exactly the brute-force difflib result."""

import difflib
import random

import pytest

from poeval.errors import PoevalError
from poeval.metrics import memorization as mem


def sm(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def rand_str(rng: random.Random, n: int, alphabet: str) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def mutate(rng: random.Random, s: str, n_edits: int, alphabet: str) -> str:
    s = list(s)
    for _ in range(n_edits):
        op = rng.random()
        i = rng.randrange(len(s) + 1)
        if op < 0.4 and i < len(s):
            s[i] = rng.choice(alphabet)
        elif op < 0.7 and i < len(s):
            del s[i]
        elif op < 0.85 and len(s) > 2:  # move a chunk: makes difflib's greedy blocks differ from the LCS
            j = rng.randrange(len(s))
            k = min(len(s), j + rng.randint(1, 6))
            chunk = s[j:k]
            del s[j:k]
            p = rng.randrange(len(s) + 1)
            s[p:p] = chunk
        else:
            s.insert(i, rng.choice(alphabet))
    return "".join(s)


def check_equal(samples, training, threshold):
    fast = mem.best_matches(samples, training, threshold)
    brute = mem.best_matches_bruteforce(samples, training, threshold)
    assert fast == brute, (threshold, samples, training)
    return fast


# --- the definition -------------------------------------------------------------------------------

ASYM_TRAIN, ASYM_SAMPLE = "sighs and night sighs", "the sighs sighs sighs"


def test_ratio_is_difflib_with_training_first_and_order_matters():
    forward, backward = sm(ASYM_TRAIN, ASYM_SAMPLE), sm(ASYM_SAMPLE, ASYM_TRAIN)
    assert forward == pytest.approx(15 / 21) and backward == pytest.approx(7 / 21)
    assert mem.ratio(ASYM_TRAIN, ASYM_SAMPLE) == forward
    # At 0.7 the definition (training first) says memorized; the other order would say no.
    assert mem.best_matches([ASYM_SAMPLE], [ASYM_TRAIN], 0.7) == [(0, 0, forward)]
    assert mem.best_matches([ASYM_TRAIN], [ASYM_SAMPLE], 0.7) == []
    out = mem.compute([[ASYM_SAMPLE, "x", "y", "z"]], [[ASYM_TRAIN, "p", "q", "r"]], levels=("verse",),
                      thresholds={"verse": 0.7})
    assert out["hits"]["verse"] == [{"sample": "0#0", "train": "0#0", "score": forward}]


def test_asymmetric_pairs_use_the_definition_order():
    rng = random.Random(11)
    words = "the night wind sighs over silent hills and sea".split()
    n = 0
    while n < 300:
        a = " ".join(rng.choice(words) for _ in range(rng.randint(2, 5)))
        b = " ".join(rng.choice(words) for _ in range(rng.randint(2, 5)))
        x, y = sm(a, b), sm(b, a)
        if x == y:
            continue
        n += 1
        threshold = (x + y) / 2  # between the two orders: only the right order gives the right answer
        got = mem.best_matches([b], [a], threshold)
        assert got == ([(0, 0, x)] if x >= threshold else []), (a, b)


# --- exactness against brute force ----------------------------------------------------------------

@pytest.mark.parametrize("threshold", [0.7, 0.8, 0.9, 0.5, 1.0])
def test_random_strings_equal_brute_force(threshold):
    rng = random.Random(int(threshold * 100))
    for _ in range(60):
        alphabet = rng.choice(["ab", "abc ", "abcdefgh ", "etaoin shrdlu"])
        training = [rand_str(rng, rng.randint(0, 30), alphabet) for _ in range(rng.randint(1, 25))]
        samples = [rand_str(rng, rng.randint(0, 30), alphabet) for _ in range(rng.randint(1, 8))]
        samples += [rng.choice(training), mutate(rng, rng.choice(training), 1, alphabet)]
        check_equal(samples, training, threshold)


@pytest.mark.parametrize("threshold", [0.7, 0.8, 0.9])
def test_near_duplicates_equal_brute_force(threshold):
    rng = random.Random(7 + int(threshold * 10))
    alphabet = "abcdefghijklmnopqrstuvwxyz ,."
    hits = 0
    for _ in range(25):
        bases = [rand_str(rng, rng.randint(20, 80), alphabet) for _ in range(4)]
        # training: bases, near-copies of them (several close candidates per sample), exact duplicates
        training = [mutate(rng, rng.choice(bases), rng.randint(0, 12), alphabet) for _ in range(20)]
        training += [training[rng.randrange(len(training))] for _ in range(3)]
        samples = [mutate(rng, rng.choice(bases), rng.randint(0, 12), alphabet) for _ in range(8)]
        samples.append(samples[0])  # duplicate sample units map back to every index
        hits += len(check_equal(samples, training, threshold))
    assert hits > 20  # the test is not vacuous


def test_long_strings_equal_brute_force():
    rng = random.Random(3)
    alphabet = "abcdefghijklmnopqrstuvwxyz     "
    for threshold in (0.7, 0.8, 0.9):
        bases = [rand_str(rng, rng.randint(200, 320), alphabet) for _ in range(3)]
        training = [mutate(rng, rng.choice(bases), rng.randint(0, 60), alphabet) for _ in range(10)]
        samples = [mutate(rng, rng.choice(bases), rng.randint(0, 60), alphabet) for _ in range(6)]
        samples.append(rand_str(rng, 250, alphabet))
        check_equal(samples, training, threshold)


def test_ties_go_to_the_lowest_training_index():
    # "ab" vs "ac" and vs "ad": both 0.5; identical training units: the first occurrence wins.
    assert mem.best_matches(["ab"], ["zz", "ac", "ad"], 0.5) == [(0, 1, 0.5)]
    assert mem.best_matches(["ab", "ab"], ["ad", "ab", "ac", "ab"], 0.5) == [(0, 1, 1.0), (1, 1, 1.0)]
    assert check_equal(["ab"], ["zz", "ac", "ad"], 0.5) == [(0, 1, 0.5)]


def _around(threshold: float, n: int, seed: int):
    """n (training, sample) pairs whose difflib ratio is within 0.03 of threshold, both sides."""
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz  "
    pairs, below, above = [], 0, 0
    while len(pairs) < n:
        a = rand_str(rng, rng.randint(8, 70), alphabet)
        edits = max(1, int(round(len(a) * (1 - threshold) * rng.uniform(0.3, 1.2))))
        b = mutate(rng, a, edits, alphabet)
        if rng.random() < 0.5:
            a, b = b, a
        r = sm(a, b)
        if abs(r - threshold) <= 0.03:
            pairs.append((a, b, r))
            below += r < threshold
            above += r >= threshold
    assert below > n // 10 and above > n // 10
    return pairs


@pytest.mark.parametrize("threshold", [0.7, 0.8, 0.9])
def test_1000_pairs_around_each_threshold(threshold):
    pairs = _around(threshold, 1000, seed=int(threshold * 1000))
    for a, b, r in pairs:
        got = mem.best_matches([b], [a], threshold)
        assert got == ([(0, 0, r)] if r >= threshold else []), (a, b, r)


@pytest.mark.parametrize("threshold", [0.7, 0.8, 0.9])
def test_ratio_exactly_at_threshold_is_memorized(threshold):
    # "a"*la vs "a"*m + "b"*(lb-m): difflib matches exactly m characters, ratio 2m/(la+lb).
    # For every length pair, the smallest m that reaches the threshold in float arithmetic.
    n_exact = 0
    for la in range(1, 120, 7):
        samples, expected = [], []
        for lb in range(1, 120):
            total = la + lb
            m = next((m for m in range(min(la, lb) + 1) if 2 * m / total >= threshold), None)
            if m is None:
                continue
            s = "a" * m + "b" * (lb - m)
            assert sm("a" * la, s) == 2 * m / total
            expected.append((len(samples), 0, 2 * m / total))
            n_exact += 2 * m / total == threshold
            samples.append(s)
            # one match fewer must not be memorized
            s_minus = "a" * (m - 1) + "b" * (lb - m + 1) if m else None
            if s_minus is not None and m - 1 <= lb:
                samples.append(s_minus)
        assert mem.best_matches(samples, ["a" * la], threshold) == expected
    assert n_exact > 10


# --- units, rates, edge cases ---------------------------------------------------------------------

Q = ["the cat sat on the mat", "a dog lay by the door", "birds sang in the tree", "rain fell on the roof"]


def test_units_per_level():
    assert mem.units([Q], "quatrain") == [" ".join(Q)]
    assert mem.units([Q], "couplet") == [f"{Q[0]} {Q[1]}", f"{Q[2]} {Q[3]}"]
    assert mem.units([Q, Q[::-1]], "verse") == Q + Q[::-1]
    assert mem.units([], "verse") == []
    with pytest.raises(PoevalError):
        mem.units([Q], "stanza")
    with pytest.raises(PoevalError):
        mem.units([Q[:3]], "verse")
    with pytest.raises(PoevalError):
        mem.units(["abcd"], "verse")


def test_rates_hand_computed():
    other = ["0123456789012345678901234567890123456789"] * 3 + ["98765432109876543210987654321098765432"]
    r1 = ["when shall we three meet again", "in thunder lightning or in rain",
          "when the hurlyburly is done", "when the battle is lost and won"]
    typo = "when the battle is lost and wan"  # one substitution in 31 chars: 60/62 > 0.9
    reference = [Q, r1]
    samples = [
        Q,                                       # all levels memorized (score 1.0)
        other,                                   # nothing
        r1[:2] + other[:2],                      # first couplet, verses 0 and 1
        other[:3] + [typo],                      # verse 3 (typo of r1[3]) only
    ]
    out = mem.compute(samples, reference, sample_ids=["s0", "s1", "s2", "s3"], reference_ids=["q", "r"])
    assert out["n_units"] == {"quatrain": 4, "couplet": 8, "verse": 16}
    assert out["quatrain"] == 1 / 4
    assert out["couplet"] == 3 / 8
    assert out["verse"] == 7 / 16
    assert out["hits"]["quatrain"] == [{"sample": "s0", "train": "q", "score": 1.0}]
    assert out["hits"]["couplet"] == [{"sample": "s0#0", "train": "q#0", "score": 1.0},
                                      {"sample": "s0#1", "train": "q#1", "score": 1.0},
                                      {"sample": "s2#0", "train": "r#0", "score": 1.0}]
    verse = {(h["sample"], h["train"]): h["score"] for h in out["hits"]["verse"]}
    assert verse == {("s0#0", "q#0"): 1.0, ("s0#1", "q#1"): 1.0, ("s0#2", "q#2"): 1.0, ("s0#3", "q#3"): 1.0,
                     ("s2#0", "r#0"): 1.0, ("s2#1", "r#1"): 1.0, ("s3#3", "r#3"): 60 / 62}
    # default ids are positions; one level only
    out = mem.compute(samples, reference, levels=("couplet",))
    assert set(out) == {"couplet", "hits", "n_units", "per_poem"}
    assert [h["sample"] for h in out["hits"]["couplet"]] == ["0#0", "0#1", "2#0"]


def test_empty_inputs():
    out = mem.compute([], [Q])
    assert out["quatrain"] is None and out["couplet"] is None and out["verse"] is None
    assert out["hits"] == {"quatrain": [], "couplet": [], "verse": []}
    assert out["n_units"] == {"quatrain": 0, "couplet": 0, "verse": 0}
    out = mem.compute([Q], [])
    assert out["quatrain"] == 0.0 and out["verse"] == 0.0
    assert mem.best_matches([], ["a"], 0.7) == []
    assert mem.best_matches(["a"], [], 0.7) == []
    # empty strings: difflib's ratio of two empty strings is 1.0
    assert check_equal(["", "a"], ["", "b"], 0.9) == [(0, 0, 1.0)]


def test_bad_arguments():
    with pytest.raises(PoevalError):
        mem.best_matches(["a"], ["a"], 0.0)
    with pytest.raises(PoevalError):
        mem.best_matches(["a"], ["a"], 1.5)
    with pytest.raises(PoevalError):
        mem.best_matches("abc", ["a"], 0.7)
    with pytest.raises(PoevalError):
        mem.compute([Q], [Q], levels=("stanza",))
    with pytest.raises(PoevalError):
        mem.compute([Q], [Q], sample_ids=["a", "b"])


# --- the paper's code: difflib.get_close_matches, autojunk on (metrics.memorization.autojunk) --------

SONNET = ("Shall I compare thee to a summer's day? Thou art more lovely and more temperate: Rough winds do shake "
          "the darling buds of May, And summer's lease hath all too short a date; Sometime too hot the eye of "
          "heaven shines").split()


def _verses(words):
    return [" ".join(words[k * 10:(k + 1) * 10]) for k in range(3)] + [" ".join(words[30:])]


def test_autojunk_reproduces_get_close_matches_and_differs_from_the_default():
    train = _verses(SONNET)
    moved = _verses(SONNET[1:] + SONNET[:1])   # one word moved to the end: a near-copy of 214 characters
    train_unit, sample_unit = " ".join(train), " ".join(moved)
    assert len(sample_unit) >= 200   # difflib's autojunk only acts on sequences of 200 or more
    default = mem.compute([moved], [train], levels=("quatrain",))
    paper = mem.compute([moved], [train], levels=("quatrain",), autojunk=True)
    assert default["quatrain"] == 1.0 and default["hits"]["quatrain"][0]["score"] == pytest.approx(sm(train_unit, sample_unit))
    assert default["hits"]["quatrain"][0]["score"] > 0.95
    assert paper["quatrain"] == 0.0
    assert difflib.get_close_matches(sample_unit, [train_unit], n=1, cutoff=0.7) == []   # the paper's call
    assert difflib.SequenceMatcher(None, train_unit, sample_unit).ratio() < 0.1


def test_autojunk_mode_decides_as_get_close_matches_on_random_long_units():
    rng = random.Random(7)
    alphabet = "aaaeeeiou nrst"
    training = ["".join(rng.choice(alphabet) for _ in range(rng.randint(150, 260))) for _ in range(30)]
    samples = [t[: rng.randint(0, 20)] + t[rng.randint(20, 40):] if k % 2 else t[::-1]
               for k, t in enumerate(training[:20])]
    for threshold in (0.6, 0.8):
        fast = mem.best_matches(samples, training, threshold, autojunk=True)
        assert fast == mem.best_matches_bruteforce(samples, training, threshold, autojunk=True)
        expected = [i for i, s in enumerate(samples) if difflib.get_close_matches(s, training, n=1, cutoff=threshold)]
        assert [i for i, _, _ in fast] == expected
        assert fast != mem.best_matches(samples, training, threshold)


# --- the class bound, the index and its cache (module doc, filters 3-4) ------------------------------------

def lcs(a: str, b: str) -> int:
    """Longest common subsequence by the textbook dynamic programme (an independent reference)."""
    row = [0] * (len(b) + 1)
    for ch in a:
        prev_diag = 0
        for j, other in enumerate(b, 1):
            prev_diag, row[j] = row[j], prev_diag + 1 if ch == other else max(row[j], row[j - 1])
    return row[-1]


def test_the_class_bound_is_never_below_the_lcs_and_equals_it_with_one_class():
    rng = random.Random(5)
    alphabet = "etaoin shrdluäö"
    for _ in range(300):
        a, b = rand_str(rng, rng.randint(0, 40), alphabet), rand_str(rng, rng.randint(0, 40), alphabet)
        counts = {ch: rng.randint(1, 9) for ch in alphabet}
        true = lcs(a, b)
        for k in (1, 2, 3, 5, len(alphabet)):
            classes = mem.partition(counts, k)
            assert sorted("".join(classes)) == sorted(alphabet)           # a partition of the alphabet
            index = mem.build_index([b], classes=k)
            bound = sum(lcs(pa[0], pb[0]) for pa, pb in zip(index.project([a]), index.projections))
            assert bound >= true
            if k == 1:
                assert bound == true
            if k == len(alphabet):  # one character per class: the multiset bound
                assert bound == sum(min(a.count(c), b.count(c)) for c in set(a) & set(b))


def test_the_partition_balances_counts_deterministically():
    counts = {" ": 18, "e": 10, "t": 7, "a": 6, "o": 6, "n": 5, "i": 5, "s": 5}
    # most frequent first, each to the lightest class (ties: the lower), equal counts in code point order:
    # k=2: " " e t a -> loads 18 | 23; o -> 24 | 23; i -> 24 | 28; n -> 29 | 28; s -> 29 | 33
    assert mem.partition(counts, 2) == (" no", "aeist")
    # k=3: " " e t -> 18 | 10 | 7; a -> 18 | 10 | 13; o -> 18 | 16 | 13; i -> 18 | 16 | 18; n -> c1 (21); s -> c0
    assert mem.partition(counts, 3) == (" s", "eno", "ait")
    assert mem.partition(dict(reversed(list(counts.items()))), 3) == mem.partition(counts, 3)
    assert mem.partition({"a": 1}, 3) == ("a", "", "")


@pytest.mark.parametrize("classes", [1, 2, 3, 4, 7])
def test_any_number_of_classes_gives_the_brute_force_result(classes):
    rng = random.Random(classes)
    alphabet = "abcdefghijklmnopqrstuvwxyz ,."
    bases = [rand_str(rng, rng.randint(20, 90), alphabet) for _ in range(5)]
    training = [mutate(rng, rng.choice(bases), rng.randint(0, 10), alphabet) for _ in range(40)]
    samples = [mutate(rng, rng.choice(bases), rng.randint(0, 10), alphabet) for _ in range(15)]
    index = mem.build_index(training, classes=classes)
    assert len(index.classes) == classes
    for threshold in (0.7, 0.8, 0.9):
        brute = mem.best_matches_bruteforce(samples, training, threshold)
        assert mem.best_matches(samples, index, threshold) == brute
    assert brute  # not vacuous


def test_adversarial_units_equal_brute_force():
    rng = random.Random(13)
    training = ["", "a", "aa", "a" * 63, "a" * 64, "a" * 65, "ab" * 40, "a" * 253, "a" * 254 + "b", "a" * 300,
                "b" * 300, " " * 10, "xyz", "ÄÖÜ äöü ß", "🙂" * 5, "a\nb", "tab\there"]
    samples = ["", "a", "b", "a" * 64, "a" * 70, "ab" * 39 + "b", "a" * 255, "a" * 280 + "b" * 20, " " * 9,
               "äöü", "🙂" * 4 + "x", "a\nb", "unknown ∑ chars ∑", "q" * 400]
    samples += [mutate(rng, rng.choice(training), 2, "ab") for _ in range(20) if training]
    for threshold in (0.5, 0.7, 0.8, 0.9, 1.0):
        hits = check_equal(samples, training, threshold)
        assert hits
    # a sample longer than 255 characters against long training units: the wider accumulator
    long_train = [rand_str(rng, 400, "ab ") for _ in range(5)]
    long_samples = [mutate(rng, t, 30, "ab ") for t in long_train]
    assert check_equal(long_samples, long_train, 0.8)


def test_the_index_cache_round_trips_and_refuses_a_stale_or_partial_one(tmp_path):
    rng = random.Random(2)
    alphabet = "abcdefghij klmnop\n"
    train = [[rand_str(rng, rng.randint(5, 40), alphabet) for _ in range(4)] for _ in range(30)]
    train += [train[3], train[7]]                          # duplicate quatrains
    samples = [[mutate(rng, v, 2, alphabet) for v in q] for q in train[:10]]
    source = tmp_path / "train.jsonl"
    source.write_text("the training split\n")
    levels = ("quatrain", "couplet", "verse")
    built = {lv: mem.build_index(mem.units(train, lv)) for lv in levels}
    mem.save_index(built, tmp_path / "index", source)
    loaded = mem.load_index(tmp_path / "index", levels, input_path=source)
    for lv in levels:
        assert loaded[lv].text == built[lv].text and loaded[lv].classes == built[lv].classes
        assert loaded[lv].projections == built[lv].projections
        assert (loaded[lv].first == built[lv].first).all() and (loaded[lv].inverse == built[lv].inverse).all()
    assert mem.compute(samples, train, index=loaded) == mem.compute(samples, train)
    mem.save_index(built, tmp_path / "index", source)      # replaced in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index", "train.jsonl"]
    source.write_text("another training split\n")
    with pytest.raises(PoevalError, match="built from another file, or another version of it"):
        mem.load_index(tmp_path / "index", levels, input_path=source)
    mem.save_index({"quatrain": built["quatrain"]}, tmp_path / "q", source)
    with pytest.raises(PoevalError, match="no 'verse' level"):
        mem.load_index(tmp_path / "q", ("verse",))
    with pytest.raises(PoevalError, match="not found"):
        mem.load_index(tmp_path / "nothing", levels)
    with pytest.raises(PoevalError, match="another reference"):
        mem.compute(samples, train[:-1], index=loaded)


def test_a_failed_save_leaves_the_earlier_index(tmp_path, monkeypatch):
    source = tmp_path / "train.jsonl"
    source.write_text("x\n")
    first = {"verse": mem.build_index(["one verse", "two verse"])}
    mem.save_index(first, tmp_path / "index", source)

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(mem.np, "savez", boom)
    with pytest.raises(OSError):
        mem.save_index({"verse": mem.build_index(["three"])}, tmp_path / "index", source)
    assert mem.load_index(tmp_path / "index", ("verse",))["verse"].text == first["verse"].text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index", "train.jsonl"]


def test_exclude_equals_the_reference_without_those_quatrains():
    rng = random.Random(4)
    alphabet = "abcdefgh ij"
    train = [[rand_str(rng, rng.randint(4, 30), alphabet) for _ in range(4)] for _ in range(25)]
    train[10] = train[2]                                   # a duplicate: excluding one copy keeps the other
    train[11] = list(train[5])
    samples = [train[2], train[5], [mutate(rng, v, 1, alphabet) for v in train[8]], train[20]]
    exclude = [2, 8, 11, 20, 5]
    kept = [q for i, q in enumerate(train) if i not in exclude]
    kept_ids = [i for i in range(len(train)) if i not in exclude]
    index = {lv: mem.build_index(mem.units(train, lv)) for lv in ("quatrain", "couplet", "verse")}
    got = mem.compute(samples, train, index=index, exclude=exclude)
    want = mem.compute(samples, kept, reference_ids=kept_ids)
    assert got == want
    assert {h["train"] for h in got["hits"]["quatrain"]} >= {10}    # train[2]'s copy at index 10
    assert not any(h["train"] in exclude for h in got["hits"]["quatrain"])
    with pytest.raises(PoevalError, match="training indices"):
        mem.compute(samples, train, index=index, exclude=[len(train)])


def test_real_model_samples_equal_brute_force(root):
    """Samples of the main job's fine-tuned GPT-2 S and SmolLM2 against the training quatrains nearest to
    them and random ones (tests/fixtures/memorization_real.jsonl, from scripts/make_memorization_fixture.py).
    The models copy nothing at the paper's thresholds, so lower ones are searched too: then every sample unit
    has candidates, and the branch and bound decides among several."""
    import json

    records = [json.loads(line) for line in (root / "tests/fixtures/memorization_real.jsonl").open(encoding="utf-8")]
    samples = [r["lines"] for r in records if r["role"] == "sample"]
    train = [r["lines"] for r in records if r["role"] == "train"]
    assert len(samples) == 24 and len(train) == 240
    n_hits = 0
    for level, low in (("quatrain", 0.4), ("couplet", 0.45), ("verse", 0.5)):
        s_units, t_units = mem.units(samples, level), mem.units(train, level)
        # one brute-force scan: the best match does not depend on the threshold, only whether it counts
        brute = mem.best_matches_bruteforce(s_units, t_units, low)
        for threshold in (low, mem.LEVELS[level]):
            assert mem.best_matches(s_units, t_units, threshold) == [h for h in brute if h[2] >= threshold]
        n_hits += len(brute)
    assert n_hits > 50
