"""rlsim: a discrete-event simulator of LLM RL post-training clusters."""

__version__ = "0.1.0"
