"""Preference pairs labelled by the simulator: free text (`text`) and tool use (`tools`), with the labels that
survive execution noise (`noise`), the tool track's further pair kinds (`speed`, `further_call`, `turn_kinds`), and
the names of every source (`sources`)."""
