"""ncprobe-headsim: an example probe shipped as its own distribution (``ncprobe run headsim``).

Per NCIMP compound, the cosine between the compound's vector (the model's vector of the
compound's words, out of context: for word vectors the mean of its words') and its head
word's (and its modifier's), correlated with the gold compositionality score.
"""
