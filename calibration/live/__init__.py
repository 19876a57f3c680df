"""A small but real RL post-training system, run live on this machine to validate rlsim.

Torch only, no downloads: a character tokenizer (`tokenizer`), verifiable tasks with a
multi-turn sandbox variant (`tasks`, `sandbox`), a tiny decoder-only policy (`model`), a
continuous-batching generation engine with a KV cache (`engine`), reward workers in a
process pool (`reward`), a GRPO trainer (`grpo`), a supervised warm-up (`sft`), and the
sync / one_off drivers that record their phases in rlsim's record format (`runner`).
`scenario` turns a finished live run into the equivalent rlsim scenario and `validate`
compares the two (docs/validation.md).
"""
