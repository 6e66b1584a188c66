"""Recall: what an agent reads. The summary or the raw events, ranked and packed into a budget."""
