package differential

import (
	"bufio"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cockroachdb/datadriven"

	"github.com/groupquake/groupquake/coordinator"
)

// rawVectors are the differential mode's own vectors: rules a broker checks
// in KafkaApis before its group coordinator sees a request.
//
//go:embed testdata/kafkaapis/*.txt
var rawVectors embed.FS

// VectorDirs are the folders of coordinator/testdata the differential mode
// replays: every conformance vector of the coordinator.
var VectorDirs = []string{"classic", "offsets", "consumer", "share"}

// Vectors returns every section the differential mode replays, from the
// copies built into the binary: the coordinator's vectors (VectorDirs),
// then the differential mode's own (testdata/kafkaapis), in file-name order
// within each folder. Section names are as LoadDir gives them
// ("classic/rebalance.txt", "kafkaapis/…").
func Vectors() ([]Section, error) {
	sub, err := fs.Sub(coordinator.VectorFiles, "testdata")
	if err != nil {
		return nil, err
	}
	secs, err := LoadFS(sub, VectorDirs...)
	if err != nil {
		return nil, err
	}
	raw, err := fs.Sub(rawVectors, "testdata")
	if err != nil {
		return nil, err
	}
	more, err := LoadFS(raw, "kafkaapis")
	if err != nil {
		return nil, err
	}
	return append(secs, more...), nil
}

// LoadFS is LoadDir over a file system: every .txt vector under dirs[i] of
// fsys, in file-name order.
func LoadFS(fsys fs.FS, dirs ...string) ([]Section, error) {
	var out []Section
	for _, d := range dirs {
		files, err := fs.Glob(fsys, path.Join(d, "*.txt"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no vectors in %s: expected *.txt files of datadriven commands", d)
		}
		slices.Sort(files)
		for _, f := range files {
			r, err := fsys.Open(f)
			if err != nil {
				return nil, err
			}
			secs, err := parse(r, f)
			r.Close()
			if err != nil {
				return nil, err
			}
			out = append(out, secs...)
		}
	}
	return out, nil
}

// Step is one command of a vector with the output the vector file expects
// from the reference at the version the vector pins.
type Step struct {
	// Pos is file:line of the command, the key the explanations use.
	Pos      string
	Line     int
	Cmd      string
	Args     []datadriven.CmdArg
	Expected string
}

// Section is the run of steps from one `new` to the next: one fresh
// coordinator in the reference, one fresh namespace on the target.
type Section struct {
	File string // path relative to the vectors root, e.g. classic/rebalance.txt
	// Index counts the sections of File from 0.
	Index int
	// New is the `new` command that opened the section; nil when the file
	// starts without one (the harness then makes a default coordinator).
	New   *Step
	Steps []Step
}

// Name is File, with #Index for every section after the first.
// Share reports whether section s sends share-group requests.
func (s Section) Share() bool {
	for _, st := range s.Steps {
		if strings.HasPrefix(st.Cmd, "share-") {
			return true
		}
	}
	return false
}

func (s Section) Name() string {
	if s.Index == 0 {
		return s.File
	}
	return fmt.Sprintf("%s#%d", s.File, s.Index)
}

// LoadDir parses every .txt vector under root/dirs[i], in file-name order.
func LoadDir(root string, dirs ...string) ([]Section, error) {
	var out []Section
	for _, d := range dirs {
		files, err := filepath.Glob(filepath.Join(root, d, "*.txt"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no vectors in %s: expected *.txt files of datadriven commands", filepath.Join(root, d))
		}
		slices.Sort(files)
		for _, f := range files {
			rel, _ := filepath.Rel(root, f)
			secs, err := ParseFile(f, filepath.ToSlash(rel))
			if err != nil {
				return nil, err
			}
			out = append(out, secs...)
		}
	}
	return out, nil
}

// ParseFile splits a datadriven file (command, "----", expected output up
// to a blank line; "#" comments between blocks) into sections.
func ParseFile(path, name string) ([]Section, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	secs, err := parse(f, name)
	if err != nil && !strings.HasPrefix(err.Error(), name+":") {
		err = fmt.Errorf("read %s: %v", path, err)
	}
	return secs, err
}

// parse splits the vector file read from r, named name in positions.
func parse(r io.Reader, name string) ([]Section, error) {
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var secs []Section
	cur := Section{File: name}
	started := false
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		cmd, args, err := datadriven.ParseLine(l)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, i+1, err)
		}
		st := Step{Pos: fmt.Sprintf("%s:%d", name, i+1), Line: i + 1, Cmd: cmd, Args: args}
		if i+1 >= len(lines) || lines[i+1] != "----" {
			return nil, fmt.Errorf("%s:%d: command %q is not followed by a ---- line", name, i+1, cmd)
		}
		i += 2
		var exp []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			exp = append(exp, lines[i])
		}
		st.Expected = strings.Join(exp, "\n")
		if cmd == "new" {
			if started {
				secs = append(secs, cur)
			}
			cur = Section{File: name, Index: len(secs), New: &st}
			started = true
			continue
		}
		started = true
		cur.Steps = append(cur.Steps, st)
	}
	if started {
		secs = append(secs, cur)
	}
	return secs, nil
}

// arg helpers over datadriven arguments, read as vectors.Args reads them.

func hasArg(args []datadriven.CmdArg, key string) bool { return vecArgs(args).Has(key) }

func argVal(args []datadriven.CmdArg, key, def string) string { return vecArgs(args).Val(key, def) }

func argList(args []datadriven.CmdArg, key string) []string { return vecArgs(args).List(key) }
