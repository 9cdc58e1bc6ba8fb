"""A Go error assigned and not checked yet gets its check, returning the other
results' zero values (speculator/next_edit/error_checks.py)."""

from __future__ import annotations

from test_next_edit_line_edits import inserted, proposed

from speculator.next_edit.error_checks import error_check_lines

CONFIG_GO = """package config

type Config struct {
	Path string
}

func Load(path string) (*Config, Config, int, string, bool, error) {
	data, err := os.ReadFile(path)
	cfg := &Config{Path: string(data)}
	return cfg, *cfg, len(data), "", true, nil
}

func Save(c *Config) error {
	n, writeErr := write(c)
	if writeErr != nil {
		return writeErr
	}
	_ = n
	_, err := flush()
	// flushed
	return err
}

func Parse(s string) (time.Time, error) {
	v, err := parse(s)
	return v, nil
}

func Each(paths []string) error {
	var err error
	for _, p := range paths {
		_, err = os.Stat(p)
	}
	return err
}

func main() {
	data, err := os.ReadFile("a")
	_ = data
}
"""


def test_an_error_assigned_on_the_edited_line_gets_its_check() -> None:
    assert error_check_lines(CONFIG_GO, (7, 8), "go") == {
        7: "\tdata, err := os.ReadFile(path)\n"
        "\tif err != nil {\n"
        '\t\treturn nil, Config{}, 0, "", false, err\n'
        "\t}",
    }


def test_an_error_checked_or_returned_next_is_left_alone() -> None:
    assert error_check_lines(CONFIG_GO, (13, 14), "go") == {}  # `if writeErr != nil`
    assert error_check_lines(CONFIG_GO, (18, 19), "go") == {}  # returned past a comment
    assert error_check_lines(CONFIG_GO, (31, 32), "go") == {}  # last in a loop: after it


def test_no_check_where_the_results_zero_values_or_an_error_result_are_unknown() -> None:
    assert error_check_lines(CONFIG_GO, (24, 25), "go") == {}  # time.Time: whose zero?
    assert error_check_lines(CONFIG_GO, (37, 38), "go") == {}  # main returns no error
    assert error_check_lines(CONFIG_GO, (7, 8), "python") == {}


def test_err_added_to_an_assignment_proposes_the_check() -> None:
    before = CONFIG_GO.replace("data, err := os.ReadFile(path)", "data := os.ReadFile(path)")
    at = before.index("data := os.ReadFile(path)") + len("data")
    request = inserted(before, at, ", err", "config.go", "go")
    after = proposed(request)
    assert "os.ReadFile(path)\n\tif err != nil {\n\t\treturn nil, Config{}, 0" in after
