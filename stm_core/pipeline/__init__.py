"""``build_context`` as a pipeline of small stages, one module each, and the
post-turn capture (:mod:`~stm_core.pipeline.record`).

What belongs here: a rule about what the model sees this turn (visibility,
budget, depth, expiry, nudges, rendering) or what a turn leaves behind, with
the helpers only those stages use (:mod:`~stm_core.pipeline.memory_ttl`). A
stage reads through the engine (:mod:`stm_core.engine`) and never imports
admin, the tool or the facade.
"""
