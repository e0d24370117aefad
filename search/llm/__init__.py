"""The LLM proposer: DSL candidates from any OpenAI-compatible endpoint, refined by the
compiler's, the checker's and the profile's feedback.

An LLM writes kernels in the DSL, never in AscendC; the deterministic lowering does the rest.
One module per idea, in the order an answer travels:

| module | what |
|---|---|
| :mod:`.config` | :class:`LlmConfig`: endpoint, model, rounds, timeouts, cache, replay |
| :mod:`.prompt`, ``prompts/v1.md``, :mod:`.examples` | the versioned prompt template, filled in from the task, the SoC, the DSL reference and the builtin kernels of similar registry ops |
| :mod:`.client` | one chat completion: retries with backoff, structured output or not |
| :mod:`.cache`, :mod:`.transcript`, :mod:`.answers` | the response cache by prompt hash, a replay from a run directory, every exchange stored in the run directory |
| :mod:`.extract`, :mod:`.screen` | candidates read out of an answer (JSON or fenced code), programs that reach outside the DSL rejected, names made safe |
| :mod:`.session` | the rounds: propose, repair (the exact error), optimise (the best kernel's figures); the accounting |
| :mod:`.reviser` | the session inside a search: repair and optimisation rounds while the search runs |
| :mod:`.proposer` | :class:`LlmProposer`, the session behind the Proposer seam |
| :mod:`.report` | the accounting and the verdicts (who won, LLM tiling against the search's) as text |

Nothing from an answer is executed, passed to a shell or written outside the run directory
(the cache stores answer text under prompt-hash names); programs are only parsed as DSL.
"""
