"""The simulator as a reward: TRL's reward-function signature (`reward`), the tool-calling environment
(`env`), and the train boards whose rollouts score differently (`boards`)."""
