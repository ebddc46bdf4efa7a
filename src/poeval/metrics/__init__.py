"""Metrics: the metric families (:mod:`.length`, :mod:`.lexical`, :mod:`.memorization`, :mod:`.schemes`,
:mod:`.semantic`), the evaluation of a sample with them (:mod:`.evaluate`) and style adherence
(:mod:`.adherence`)."""
