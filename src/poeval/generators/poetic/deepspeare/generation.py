"""DeepSpeare's generation (package docstring: :mod:`poeval.generators.poetic.deepspeare`, "Generation"):
a trained checkpoint loaded, quatrains sampled verse by verse under the original's constraints, reranked by
the pentameter model, and the sampling loop."""

from __future__ import annotations

import collections
import math
from pathlib import Path

import torch

from poeval.errors import PoevalError
from poeval.generators.decoding import Decoding, ancestral_only, parse_decoding
from poeval.generators.interface import refuse_style
from poeval.generators.poetic.common import (detokenize, draw, filtered_probs, is_word,
                                             load_checkpoint, tokenize, verse_ok)
from poeval.generators.poetic.deepspeare.data import ARCH, MODEL_DEFAULTS, PAD_CHAR, Tables, pm_text
from poeval.generators.poetic.deepspeare.model import Batcher, DeepSpeare, _pad2
from poeval.generators.prompting import Prompt
from poeval.generators.sampling import Attempt, sample_loop
from poeval.generators.sampling import resolve as resolve_sampling
from poeval.poetry import style as _style



class Loaded:
    """A trained DeepSpeare checkpoint: the model (eval mode), its tables and config, with small helpers
    to score text with each component."""

    def __init__(self, model_dir: str | Path):
        arch, config, vocab, states = load_checkpoint(model_dir)
        if arch != ARCH:
            raise PoevalError(f"{model_dir} holds a {arch!r} model, not {ARCH!r}")
        if "line_order" not in config:   # written before the language model shared the pentameter encoder
            raise PoevalError(f"{model_dir} holds a DeepSpeare checkpoint of an earlier poeval (its own character "
                              f"encoder, verses top-down with a fresh state each): train it again")
        self.cfg = config
        self.style = _style.STYLE_TOKENS if config["conditioned"] else ()
        self.tables = Tables(vocab, config["chars"], config["max_word_chars"], self.style)
        self.vocab = vocab
        self.model = DeepSpeare(config, len(vocab), len(config["chars"]), vocab.pad)
        self.model.load_states(states)
        self.model.eval()
        self.batcher = Batcher(self.model, self.tables, config)

    def _word_tensors(self, words: list[str]):
        return _pad2([self.tables.word_chars(w) for w in words], PAD_CHAR)

    @torch.no_grad()
    def rhyme_embeddings(self, words: list[str]):
        chars, lengths = self._word_tensors(words)
        return self.model.rhyme.embed(self.model.chars, chars, lengths)

    @torch.no_grad()
    def rhyme_similarity(self, word_a: str, word_b: str) -> float:
        """The rhyme model's cosine similarity of two words' endings."""
        u = self.rhyme_embeddings([word_a, word_b])
        return float(u[0] @ u[1])

    @torch.no_grad()
    def pentameter_loss(self, verses: list[str]) -> list[float]:
        """The pentameter model's loss (cross-entropy + penalties) of each verse; lower = more iambic."""
        lines = [self.tables.char_ids(pm_text(v, self.cfg["pm_max_chars"]) or " ") for v in verses]
        return self.batcher.pm_lines(lines).tolist()

    @torch.no_grad()
    def lm_loss(self, quatrains: list[list[str]]) -> float:
        """Per-token cross-entropy of the language model on ``quatrains`` (each its own context)."""
        poems = []
        for q in quatrains:
            rows = [tokenize(x) for x in q]
            poems.append({"rows": [[self.tables.type_id(t, add=False) for t in r] for r in rows],
                          "verse": [True] * len(rows)})
        loss, n = self.batcher.lm_loss(poems)
        return float(loss) / max(n, 1)


# Stopwords the repetition constraints let recur: NLTK's English list (nltk.corpus.stopwords.words("english"),
# which the original's sonnet_gen.py loads) plus the original's custom_stopwords, embedded because NLTK's
# corpora are not a poeval dependency. German has no original; poeval's own short list of function words
# (the model parameter stopwords: english gives German models the original's English list, as the paper ran it).
STOPWORDS = {
    "en": frozenset("""i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
        yourselves he him his himself she she's her hers herself it it's its itself they them their theirs
        themselves what which who whom this that that'll these those am is are was were be been being have has
        had having do does did doing a an the and but if or because as until while of at by for with about
        against between into through during before after above below to from up down in out on off over under
        again further then once here there when where why how all any both each few more most other some such
        no nor not only own same so than too very s t can will just don don't should should've now d ll m o re
        ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn
        isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren
        weren't won won't wouldn wouldn't""".split()) | {"thee", "thou", "thy", "'d", "'s", "'ll", "must", "shall"},
    "de": frozenset("""der die das des dem den ein eine einer eines einem einen und oder aber doch denn wenn als
        wie so auch nur noch schon nicht kein keine ich du er sie es wir ihr mich dich sich uns euch mir dir ihm
        ihn ihnen mein meine dein deine sein seine ihre unser in im an am auf aus bei mit nach von vom zu zum zur
        durch für um über unter vor hinter zwischen ist bin bist sind war waren wird werden hat habe hast haben
        hatte kann muss soll will da dann wo was wer dass ob nun hier dort""".split()),
}
# the original's avoid_symbols: never generated
AVOID_SYMBOLS = frozenset("()[]“‘”’")
# the original's rhyme_threshold_neg: a verse that starts a new rhyme must not rhyme with the verse before
NON_RHYME_THRESHOLD = 0.7
# the original's reset(): each quatrain's scheme uniformly from these three
ORIGINAL_SCHEMES = ("aabb", "abab", "abba")


def constrained_draw(probs, allowed, attempts: int):
    """One draw per row of ``probs`` restricted to ``allowed``, and whether the row failed: the original's
    rejection loop (``sample_word``: up to ``attempts`` draws from ``probs`` until one is allowed) in one step.
    Its accepted word follows ``probs`` renormalised over ``allowed``, and it fails with probability
    ``(1 - q) ** attempts``, ``q`` the allowed mass."""
    kept = probs * allowed
    q = kept.sum(-1) / probs.sum(-1)
    failed = torch.rand(q.shape) < (1 - q).pow(attempts)
    nxt = draw(torch.where(failed.unsqueeze(1), probs, kept)).squeeze(1)
    return nxt, failed


def draw_schemes(n: int, mode: str, counts: dict | None = None) -> list[str]:
    """``n`` quatrain schemes: ``uniform`` over aabb/abab/abba (the original's ``random.choice``), or
    ``training``: by the training sonnets' quatrain scheme ``counts`` (uniform over the three if none)."""
    if mode == "uniform" or not counts:
        return [ORIGINAL_SCHEMES[i] for i in torch.randint(len(ORIGINAL_SCHEMES), (n,)).tolist()]
    names = sorted(counts)
    picks = torch.multinomial(torch.tensor([float(counts[s]) for s in names]), n, replacement=True).tolist()
    return [names[i] for i in picks]


def rhyme_targets(scheme: str, v: int) -> tuple[int | None, int | None]:
    """Verse ``v``'s rhyme partner (the last earlier verse of its letter) and, when its letter is new, the
    verse it must not rhyme with (the one before it): the original's ``rhyme_pttn`` pos/neg lists for
    aabb, abab and abba."""
    earlier = [u for u in range(v) if scheme[u] == scheme[v]]
    if earlier:
        return earlier[-1], None
    return None, (v - 1 if v else None)


def rerank_probs(pm_losses, temperature: float):
    """The probability of keeping each candidate verse: ``softmax(-pentameter loss / temperature)`` (the
    original's ``sent_temp`` = 0.1)."""
    return torch.softmax(-torch.as_tensor(pm_losses, dtype=torch.float64) / temperature, dim=0)


def rerank(pm_losses, temperature: float, mode: str) -> int:
    """Index of the kept candidate: drawn by :func:`rerank_probs` (``sample``) or the lowest loss (``best``)."""
    if mode == "best" or len(pm_losses) == 1:
        return int(torch.as_tensor(pm_losses).argmin())
    return int(torch.multinomial(rerank_probs(pm_losses, temperature), 1))


# a quatrain is started over after these failures (the original's reset() when a candidate verse fails)
RESTART_REASONS = ("empty_line", "constraints")


class Generator:
    """Batched quatrain generation (module docstring, "Generation")."""

    def __init__(self, loaded: Loaded, temperature: float, top_p: float, top_k: int):
        self.L = loaded
        cfg, vocab, model = {**MODEL_DEFAULTS, **loaded.cfg}, loaded.vocab, loaded.model
        self.cfg, self.vocab, self.lm = cfg, vocab, model.lm
        self.temperature, self.top_p, self.top_k = temperature, top_p, top_k
        n = len(vocab)
        words = vocab.itos
        self.style_ids = [vocab.stoi[t] for t in loaded.style]
        special = {vocab.pad, vocab.unk, vocab.bos, vocab.eos, vocab.eol, *self.style_ids}
        self.banned = sorted({vocab.pad, vocab.bos, vocab.eos, *self.style_ids})
        self.is_word = torch.tensor([i not in special and is_word(w) for i, w in enumerate(words)])
        lower: dict[str, int] = {}
        self.lower_id = torch.tensor([lower.setdefault(w.lower(), len(lower)) for w in words])
        # repetition constraints (module docstring): per lower-cased type, may it recur once (stopword or
        # punctuation)? which types are never drawn (the original's avoid_symbols and <unk>)?
        stop = STOPWORDS.get("en" if cfg["stopwords"] == "english" else cfg.get("lang", "en"), frozenset())
        free = torch.zeros(len(lower), dtype=torch.bool)
        never = torch.zeros(len(lower), dtype=torch.bool)
        for w, i in lower.items():
            free[i] = w in stop or not is_word(w)
            never[i] = w in AVOID_SYMBOLS
        never[self.lower_id[vocab.unk]] = True
        self.free, self.never = free, never
        with torch.no_grad():
            chars, lengths = loaded.batcher.type_chars[:n], loaded.batcher.type_len[:n]
            self.char_table = model.word_chars(chars, lengths)
            self.rhyme_table = model.rhyme.embed(model.chars, chars, lengths) * self.is_word.unsqueeze(1)
        self.scheme_counts = cfg.get("scheme_counts") or {}
        uniform = cfg["scheme_draw"] == "uniform"
        self.scheme_source = ("uniform (aabb, abab, abba)" if uniform or not self.scheme_counts
                              else "training sonnets")
        if self.style_ids:
            self.scheme_source = "uniform (aabb, abab, abba), prompted" if uniform else "sampled style token"
            self.meter_ids = [vocab.stoi[t] for t in loaded.style if t.startswith("<meter=")]
            self.scheme_tok = [vocab.stoi[t] for t in loaded.style if t.startswith("<scheme=")]

    # -- one decoder step over rows ``idx``
    def _step(self, tok, state, keys, mem, vis):
        lm = self.lm
        x = torch.cat([lm.embed(tok), self.char_table[tok]], dim=-1).unsqueeze(1)
        s, state = lm.decoder(x, state)
        s = s[:, 0]
        scores = lm.step_scores(s, keys).masked_fill(~vis, -1e9)
        ctx = torch.bmm(torch.softmax(scores, dim=-1).unsqueeze(1), mem).squeeze(1)
        return lm.log_probs(lm.mix(s, ctx)), state

    def _encode(self, rows: list[list[int]]):
        words, lengths = _pad2(rows, self.vocab.pad)
        enc = self.lm.encode_verses(words, lengths)
        return enc, torch.arange(words.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)

    def _style_rows(self, mem, vis, schemes: list[str] | None):
        """Each quatrain's style line, decoded right to left: the meter sampled, then the scheme token, which is
        ``schemes``' when given (a uniformly drawn scheme is the prompt) and else sampled too. Returns the rows
        (natural order: scheme, meter) and the decoder state after them (for ``verse_state: carried``)."""
        p = mem.shape[0]
        keys = self.lm.att_k(mem)
        tok = torch.full((p,), self.vocab.bos, dtype=torch.long)
        logp, state = self._step(tok, None, keys, mem, vis)
        meter = draw(self._only(logp, self.meter_ids)).squeeze(1)
        logp, state = self._step(meter, state, keys, mem, vis)
        if schemes is not None:
            scheme = torch.tensor([self.vocab.stoi[f"<scheme={s}>"] for s in schemes])
        else:
            scheme = draw(self._only(logp, self.scheme_tok)).squeeze(1)
        _, state = self._step(scheme, state, keys, mem, vis)     # the state the row's <eol> would follow
        return [[int(sc), int(me)] for sc, me in zip(scheme, meter)], state

    def _only(self, logp, allowed: list[int]):
        mask = torch.ones(logp.shape[-1], dtype=torch.bool)
        mask[allowed] = False
        return filtered_probs(logp.masked_fill(mask, -math.inf), self.temperature, self.top_p, self.top_k)

    def _logits(self, logp):
        """Logits and temperature for :func:`.common.filtered_probs`: the decoding config's temperature, or
        with ``word_temperature`` [low, high] one drawn uniformly for each row and word (the original's
        ``np.random.uniform(temp_min, temp_max)`` in ``sample_sent``)."""
        if self.cfg["word_temperature"] is None:
            return logp, self.temperature
        low, high = self.cfg["word_temperature"]
        return logp / torch.empty(logp.shape[0], 1).uniform_(low, high), 1.0

    def _allowed(self, seen, ends, recent):
        """Rows x vocabulary: what the original's ``sample_sent`` lets a verse draw next, given the lower-cased
        type counts ``seen`` of the quatrain so far (this verse included), its earlier end words ``ends`` and the
        verse's last three tokens ``recent``: no word twice unless a stopword or punctuation, nothing three
        times, no earlier end word, none of the last three tokens, no avoided symbol."""
        banned = (seen >= 2) | ((seen >= 1) & ~self.free) | ends | self.never
        allowed = ~banned[:, self.lower_id]
        return allowed.scatter_(1, recent, False)

    def _rhyme_allowed(self, pos, neg):
        """Rows x vocabulary: the words that may end a verse whose end word must rhyme with ``pos`` (cosine >=
        rhyme_threshold) and must not rhyme with ``neg`` (cosine <= 0.7), ids or -1 for none; punctuation, which
        precedes the end word in generation order, stays allowed, ``<eol>`` does not (the verse needs its end
        word; the original rejects an ``<eos>`` as not rhyming)."""
        ok = torch.ones(pos.shape[0], self.rhyme_table.shape[0], dtype=torch.bool)
        for target, keep in ((pos, lambda s: s >= float(self.cfg["rhyme_threshold"])),
                             (neg, lambda s: s <= NON_RHYME_THRESHOLD)):
            rows = (target >= 0).nonzero().squeeze(1)
            if rows.numel():
                sims = self.rhyme_table[target[rows]] @ self.rhyme_table.T
                ok[rows] &= keep(sims)
        ok |= ~self.is_word
        ok[:, self.vocab.eol] = False
        return ok

    def _decode(self, keys, mem, vis, budget, pos, neg, seen, ends, state, start):
        """Sample one verse per row (right to left) under the repetition and rhyme constraints, from decoder
        ``state`` ((h, c), each (1, R, D)) and first input tokens ``start``. Returns the token buffer (R, T) in
        generation order, lengths, finished and failed flags, end-word ids and each row's final state (after
        its last word: the state its ``<eol>`` follows, which a carried next verse starts from); ``seen`` is
        updated in place with each row's tokens."""
        r = budget.shape[0]
        steps = int(budget.max()) if r else 0
        buf = torch.full((r, max(steps, 1)), self.vocab.pad, dtype=torch.long)
        length = torch.zeros(r, dtype=torch.long)
        finished = torch.zeros(r, dtype=torch.bool)
        failed = torch.zeros(r, dtype=torch.bool)
        alive = budget > 0
        end = torch.full((r,), -1, dtype=torch.long)
        rhymed = (pos >= 0) | (neg >= 0)
        h, c = (x.clone() for x in state)
        tok = start.clone()
        pad_col = torch.full((r, 3), self.vocab.pad, dtype=torch.long)
        attempts = int(self.cfg["rhyme_attempts"])
        # rows per chunk: a (rows x vocabulary) float tensor stays below ~16 MB, so that the allocator reuses
        # its memory instead of mapping fresh pages at every step (large vocabularies: much system time)
        chunk = max(64, (1 << 22) // len(self.vocab))
        for t in range(steps):
            live = alive.nonzero().squeeze(1)
            if live.numel() == 0:
                break
            recent = torch.cat([pad_col, buf[:, :t]], dim=1)[:, -3:]
            for idx in torch.split(live, chunk):
                logp, (hn, cn) = self._step(tok[idx], (h[:, idx], c[:, idx]), keys[idx], mem[idx], vis[idx])
                h[:, idx], c[:, idx] = hn, cn
                probs = filtered_probs(*self._logits(logp), self.top_p, self.top_k, self.banned)
                allowed = self._allowed(seen[idx], ends[idx], recent[idx])
                first = (end[idx] < 0) & rhymed[idx]
                if first.any():      # the end word (first word drawn) must meet the scheme
                    allowed[first] &= self._rhyme_allowed(pos[idx[first]], neg[idx[first]])
                nxt, fail = constrained_draw(probs, allowed, attempts)
                failed[idx[fail]] = True
                new_end = (end[idx] < 0) & self.is_word[nxt]
                end[idx[new_end]] = nxt[new_end]
                buf[idx, t] = nxt
                eol = (nxt == self.vocab.eol) & ~fail
                finished[idx[eol]] = True
                grow = ~eol & ~fail
                length[idx[grow]] += 1
                seen[idx[grow], self.lower_id[nxt[grow]]] += 1
                tok[idx] = nxt
                stop = eol | fail | (t + 1 >= budget[idx])
                alive[idx[stop]] = False
        return buf, length, finished, failed, end, (h, c)

    @torch.no_grad()
    def generate(self, size: int, max_tokens: int) -> list[dict]:
        """``size`` quatrain attempts: each ``{"lines" or None, "reason", "scheme", "constrained",
        "out_of_budget", "end_punct", "restarts"}``. A quatrain that fails (a candidate verse empty or a word
        rejected ``rhyme_attempts`` times) is started over with a new scheme, up to ``restarts`` times, as the
        original's ``reset()``; ``constrained`` and ``out_of_budget`` add up over its tries."""
        results: list[dict] = [{} for _ in range(size)]
        todo = list(range(size))
        totals = {key: [0] * size for key in ("constrained", "out_of_budget")}
        for attempt in range(int(self.cfg["restarts"]) + 1):
            again = []
            for p, res in zip(todo, self._quatrains(len(todo), max_tokens)):
                for key, counts in totals.items():
                    counts[p] += res[key]
                results[p] = {**res, **{key: counts[p] for key, counts in totals.items()}, "restarts": attempt}
                if res["reason"] in RESTART_REASONS:
                    again.append(p)
            todo = again
            if not todo:
                break
        return results

    def _quatrains(self, size: int, max_tokens: int) -> list[dict]:
        """One try at ``size`` quatrains, verse by verse, ``candidates`` verses per quatrain and verse. With
        ``line_order: bottom_up`` (the original's generate) the last verse is written first: slot ``g`` of
        the generation is verse ``3 - g``, and the rhyme targets come from the scheme read backwards (for
        aabb, abab and abba the original's ``rhyme_pttn`` lists). With ``verse_state: carried`` a verse
        starts from the decoder state that ended the verse kept before it (input ``<eol>``), as the
        original's; with ``fresh`` from a zero state (input ``<bos>``)."""
        cfg, vocab, lm = self.cfg, self.vocab, self.lm
        k = int(cfg["candidates"])
        bottom_up, carried = cfg["line_order"] == "bottom_up", cfg["verse_state"] == "carried"
        mem = lm.null.view(1, 1, -1).expand(size, 1, -1)
        vis = torch.ones(size, 1, dtype=torch.bool)
        d = lm.decoder.hidden_size
        state = (torch.zeros(1, size, d), torch.zeros(1, size, d))
        start = torch.full((size,), vocab.bos, dtype=torch.long)
        uniform = cfg["scheme_draw"] == "uniform"
        schemes = draw_schemes(size, cfg["scheme_draw"], self.scheme_counts) if uniform or not self.style_ids \
            else None
        if self.style_ids:
            styles, style_state = self._style_rows(mem, vis, schemes)
            enc, m = self._encode(styles)
            mem, vis = torch.cat([mem, enc], dim=1), torch.cat([vis, m], dim=1)
            schemes = [vocab[s[0]][len("<scheme="):-1] for s in styles]
            if carried:
                state, start = style_state, torch.full((size,), vocab.eol, dtype=torch.long)
        used = torch.zeros(size, dtype=torch.long)
        valid = [True] * size
        # out_of_budget: candidates of a kept verse dropped for running out of max_new_tokens; end_punct: kept
        # verses whose first drawn token (right to left) is punctuation, not the end word (counted for the stats)
        results = [{"lines": [], "reason": None, "scheme": s, "constrained": 0, "out_of_budget": 0, "end_punct": 0}
                   for s in schemes]
        written = [s[::-1] if bottom_up else s for s in schemes]    # the scheme in generation order
        ends = torch.full((size, 4), -1, dtype=torch.long)           # end words by generation slot
        seen = torch.zeros(size, len(self.free), dtype=torch.uint8)      # lower-cased type counts
        end_mask = torch.zeros(size, len(self.free), dtype=torch.bool)
        rep = lambda x: x.repeat_interleave(k, dim=0)  # noqa: E731
        rep_state = lambda st: tuple(x.repeat_interleave(k, dim=1) for x in st)  # noqa: E731
        for v in range(4):
            pos, neg = self._targets(written, v, ends, valid, results)
            budget = (max_tokens - used).clamp(min=0)
            budget[torch.tensor([not x for x in valid])] = 0
            cand_seen = rep(seen)
            buf, length, finished, failed, end, (h, c) = self._decode(
                rep(lm.att_k(mem)), rep(mem), rep(vis), rep(budget), rep(pos), rep(neg), cand_seen, rep(end_mask),
                rep_state(state), rep(start))
            toks = [buf[i, : length[i]].tolist()[::-1] for i in range(buf.shape[0])]
            words = [[vocab[t] for t in row] for row in toks]
            ok = [bool(finished[i]) and verse_ok(words[i]) for i in range(len(words))]
            texts = [detokenize(w) if o else "" for w, o in zip(words, ok)]
            pm = self._pm_losses(texts, ok)
            chosen_rows = []
            for p in range(size):
                pick = self._keep(p, k, valid, results, failed, finished, ok, pm)
                if pick is None:
                    chosen_rows.append([])
                    continue
                results[p]["lines"].append(texts[pick])
                results[p]["end_punct"] += not bool(self.is_word[toks[pick][-1]])
                results[p]["out_of_budget"] += sum(not (finished[i] or failed[i]) for i in range(p * k, (p + 1) * k))
                ends[p, v] = end[pick]
                end_mask[p, self.lower_id[end[pick]]] = True
                seen[p] = cand_seen[pick]
                used[p] += int(length[pick]) + 1
                chosen_rows.append(toks[pick])
                if carried:
                    state[0][:, p], state[1][:, p] = h[:, pick], c[:, pick]
            if carried:
                start = torch.full((size,), vocab.eol, dtype=torch.long)
            enc, m = self._encode(chosen_rows)
            mem, vis = torch.cat([mem, enc], dim=1), torch.cat([vis, m], dim=1)
        for p in range(size):
            if not valid[p]:
                results[p]["lines"] = None
            elif bottom_up:
                results[p]["lines"].reverse()       # written last verse first; the quatrain reads top-down
        return results

    @staticmethod
    def _targets(written: list[str], v: int, ends, valid: list[bool], results: list[dict]):
        """Each quatrain's rhyme partner (end word id, -1 for none) and non-partner for generation slot ``v``
        (:func:`rhyme_targets` on the scheme in generation order); counts the rhyme-constrained verses."""
        size = len(written)
        pos = torch.full((size,), -1, dtype=torch.long)
        neg = torch.full((size,), -1, dtype=torch.long)
        for p, sch in enumerate(written):
            u_pos, u_neg = rhyme_targets(sch, v)
            if valid[p] and u_pos is not None:
                pos[p] = ends[p, u_pos]
                results[p]["constrained"] += 1
            if valid[p] and u_neg is not None:
                neg[p] = ends[p, u_neg]
        return pos, neg

    def _pm_losses(self, texts: list[str], ok: list[bool]):
        """The pentameter loss of each usable candidate verse (inf for the others)."""
        pm = torch.full((len(texts),), math.inf)
        cand = [i for i, o in enumerate(ok) if o]
        if cand:
            lines = [self.L.tables.char_ids(pm_text(texts[i], self.cfg["pm_max_chars"]) or " ") for i in cand]
            pm[cand] = self.L.batcher.pm_lines(lines)
        return pm

    def _keep(self, p: int, k: int, valid: list[bool], results: list[dict], failed, finished, ok, pm) -> int | None:
        """The candidate row kept for quatrain ``p`` (reranked by pentameter loss), or None when the quatrain
        has failed (now or before; its reason is recorded)."""
        rows = range(p * k, (p + 1) * k)
        reason = None
        if not valid[p]:
            return None
        if any(bool(failed[i]) for i in rows):
            reason = "constraints"
        elif any(bool(finished[i]) and not ok[i] for i in rows):
            reason = "empty_line"
        elif not any(ok[i] for i in rows):
            reason = "truncated"
        if reason:
            valid[p] = False
            results[p]["reason"] = results[p]["reason"] or reason
            return None
        pool = [i for i in rows if ok[i]]
        return pool[rerank(pm[pool], float(self.cfg["rerank_temperature"]), self.cfg["rerank"])]


def _attempt(res: dict) -> Attempt:
    """A :meth:`Generator.generate` result as an attempt of the shared loop: a failed quatrain keeps the
    Generator's reason (``truncated``, ``empty_line`` or ``constraints``)."""
    info = {key: res[key] for key in ("constrained", "restarts", "scheme", "out_of_budget", "end_punct")}
    if res["lines"] is None:
        return Attempt([], res["reason"] != "truncated", reason=res["reason"], info=info)
    return Attempt(res["lines"], True, info=info)


def guard_counts(counted: list[Attempt], restarts: int) -> dict:
    """How often the generator's guards, which the original lacks, fire (package docstring, "Differences
    that remain"): valid quatrains' verses with punctuation drawn before the end word, candidate verses
    dropped for running out of ``max_new_tokens``, quatrains failed at the ``restarts`` bound (the original
    restarts without bound) and the most restarts of any quatrain."""
    valid = [a for a in counted if a.reason is None]
    return {
        "verses_punct_before_end_word": sum(a.info["end_punct"] for a in valid),
        "valid_verses": 4 * len(valid),
        "candidates_out_of_budget": sum(a.info["out_of_budget"] for a in counted),
        "quatrains_at_restart_bound": sum(a.info["restarts"] == restarts and a.reason in RESTART_REASONS
                                          for a in counted),
        "max_quatrain_restarts": max((a.info["restarts"] for a in counted), default=0),
    }


def sample(model_dir: str, decoding: Decoding | dict, sampling: dict, out: str, stats: str, *,
           threads: int = 1, id_prefix: str = "", progress: bool = True, style: str | None = None,
           prompt: Prompt | None = None) -> dict:
    """Sample until ``n`` valid quatrains or ``max_attempts`` quatrain generations; write the samples JSONL
    and the stats JSON (:func:`poeval.generators.sampling.sample_loop`). ``sampling`` is a params
    ``sampling`` block (:func:`poeval.generators.sampling.resolve`; ``max_new_bytes``, for byte-level
    models, does not apply). A quatrain is valid when each of its four verses ended with ``<eol>`` within
    ``max_new_tokens`` generated tokens in all (``<eol>`` included; else ``truncated``) and has a word
    (else ``empty_line``). Deterministic for equal seed, batch_size and threads."""
    refuse_style(model_dir, style, prompt)
    decoding = ancestral_only(parse_decoding(decoding), ARCH)
    sampling = resolve_sampling(sampling)
    max_tokens = sampling["max_new_tokens"]
    if max_tokens < 4:   # a rule of this port that the schema's posint cannot express
        raise PoevalError(f"sample: max_new_tokens must be an integer >= 4 (four verses), got {max_tokens!r}")
    if not Path(model_dir).is_dir():
        raise PoevalError(f"model directory not found: {model_dir}")
    torch.set_num_threads(int(threads))
    loaded = Loaded(model_dir)
    gen = Generator(loaded, decoding.temperature, decoding.top_p, decoding.top_k)

    def extra(counted: list[Attempt]) -> dict:
        targets = collections.Counter(a.info["scheme"] for a in counted if a.reason is None)
        return {
            "max_new_tokens": max_tokens,
            "arch": ARCH,
            "candidates": int(loaded.cfg["candidates"]),
            "rhyme_threshold": float(loaded.cfg["rhyme_threshold"]),
            "rhyme_attempts": int(gen.cfg["rhyme_attempts"]),
            "restarts": int(gen.cfg["restarts"]),
            "rerank": gen.cfg["rerank"],
            "rerank_temperature": float(gen.cfg["rerank_temperature"]),
            "scheme_draw": gen.cfg["scheme_draw"],
            "line_order": gen.cfg["line_order"],
            "verse_state": gen.cfg["verse_state"],
            "word_temperature": gen.cfg["word_temperature"],
            "scheme_source": gen.scheme_source,
            "target_schemes": dict(sorted(targets.items())),
            "rhyme_constrained_verses": sum(a.info["constrained"] for a in counted),
            "quatrain_restarts": sum(a.info["restarts"] for a in counted),
            **guard_counts(counted, int(gen.cfg["restarts"])),
        }

    return sample_loop(lambda size: [_attempt(r) for r in gen.generate(size, max_tokens)], out, stats,
                       model_dir=model_dir, decoding=decoding, sampling=sampling, id_prefix=id_prefix,
                       progress=progress, desc="sample deepspeare", extra=extra)
