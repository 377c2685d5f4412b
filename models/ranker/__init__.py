"""The learned ranker (issue 17): training data from the corpus's train repositories, a
LightGBM LambdaRank model over the first stage's features, early-stopped on the benchmark's dev
split and reported on its test split."""
