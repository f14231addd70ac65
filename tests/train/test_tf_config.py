"""t2t-make-tf-configs: one TF_CONFIG per worker, worker 0 the chief."""

import json

from t2t_lite.bin import t2t_make_tf_configs


def test_one_export_line_per_worker(capsys):
    assert t2t_make_tf_configs.main(["--workers=host1:2222, 10.0.0.2:2223"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    for index, line in enumerate(lines):
        assert line.startswith("export TF_CONFIG='") and line.endswith("'")
        config = json.loads(line[len("export TF_CONFIG='"):-1])
        assert config == {"cluster": {"worker": ["host1:2222", "10.0.0.2:2223"]},
                          "task": {"type": "worker", "index": index}}
    assert t2t_make_tf_configs.main(["--workers=a:1", "--format=json"]) == 0
    assert json.loads(capsys.readouterr().out)["task"]["index"] == 0


def test_bad_worker_lists_are_one_line_errors(capsys):
    for workers, message in (("host1", "is not host:port"), ("h:70000", "port 1-65535"),
                             ("h:1,h:1", "listed twice"), (" , ", "is empty")):
        assert t2t_make_tf_configs.main([f"--workers={workers}"]) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith("t2t-make-tf-configs: error: ") and message in err, err
