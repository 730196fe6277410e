"""Supervised demonstrations for a warm start: the Oracle's free-text answers (`text`) and whole tool-using
conversations (`tools`)."""
