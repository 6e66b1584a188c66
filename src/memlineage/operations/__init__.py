"""Operations: the job queue and its workers, release, evaluation and its reports, datasets."""
