"""The paper's protocol: the prompts (Appendix A) and the action parser."""
