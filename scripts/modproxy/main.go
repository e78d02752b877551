// Command modproxy writes a Go module proxy into a directory, in the layout that
// GOPROXY=file://<dir> reads, serving modules of a working tree as one version, as if that
// version had been tagged:
//
//	go run . -version v0.1.0 -out /tmp/proxy /path/to/crew /path/to/crew/prom
//
// For each module directory it writes <module>/@v/list, <version>.info, <version>.mod and
// <version>.zip. The zip holds what a tag of the checkout would: the files git tracks or
// would track (untracked files it ignores are left out), without the directories of other
// modules, under the prefix <module>@<version>/, built by golang.org/x/mod/zip with the
// rules the go command applies. Outside a git checkout it takes every file of the directory.
//
// The crew repository's scripts/test.sh uses it to check that the integration modules, which
// require a tagged crew, install with go get once that tag exists.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	version := flag.String("version", "", "the version to serve the modules as, e.g. v0.1.0")
	out := flag.String("out", "", "the proxy's directory (created if missing)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: modproxy -version v0.1.0 -out DIR MODULE_DIR...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *version == "" || *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	now := time.Now().UTC()
	for _, dir := range flag.Args() {
		path, err := add(*out, dir, *version, now)
		if err != nil {
			fmt.Fprintf(os.Stderr, "modproxy: %s: %v\n", dir, err)
			os.Exit(1)
		}
		fmt.Printf("%s@%s\n", path, *version)
	}
}

// add writes the module in dir into the proxy at out as version, and returns its path.
func add(out, dir, version string, now time.Time) (string, error) {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return "", errors.New("go.mod has no module line")
	}
	m := module.Version{Path: path, Version: version}
	if err := module.Check(path, version); err != nil {
		return "", err
	}
	escPath, err := module.EscapePath(path)
	if err != nil {
		return "", err
	}
	escVersion, err := module.EscapeVersion(version)
	if err != nil {
		return "", err
	}
	vdir := filepath.Join(out, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return "", err
	}

	var z bytes.Buffer
	files, err := gitFiles(dir)
	switch {
	case err == nil:
		err = zip.Create(&z, m, files)
	case errors.Is(err, errNoGit):
		err = zip.CreateFromDir(&z, m, dir)
	}
	if err != nil {
		return "", err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, now})
	if err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{
		escVersion + ".zip":  z.Bytes(),
		escVersion + ".mod":  gomod,
		escVersion + ".info": info,
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return "", err
		}
	}
	return path, addToList(filepath.Join(vdir, "list"), version)
}

// addToList adds version to the proxy's list file of a module, unless it is there already.
func addToList(list, version string) error {
	data, err := os.ReadFile(list)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(data))
	if slices.Contains(versions, version) {
		return nil
	}
	return os.WriteFile(list, []byte(strings.Join(append(versions, version), "\n")+"\n"), 0o644)
}

// errNoGit is gitFiles' error for a directory that is not in a git checkout.
var errNoGit = errors.New("not in a git checkout")

// gitFiles lists the files of dir that git tracks or would track, skipping tracked files
// deleted from the working tree.
func gitFiles(dir string) ([]zip.File, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: git ls-files: %v", errNoGit, err)
	}
	var files []zip.File
	seen := map[string]bool{}
	for _, name := range strings.Split(string(out), "\x00") {
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		f := file{slash: name, path: filepath.Join(dir, filepath.FromSlash(name))}
		if _, err := os.Lstat(f.path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		files = append(files, f)
	}
	return files, nil
}

// file is one file of a module's working tree, as zip.Create takes it.
type file struct{ slash, path string }

func (f file) Path() string                 { return f.slash }
func (f file) Lstat() (os.FileInfo, error)  { return os.Lstat(f.path) }
func (f file) Open() (io.ReadCloser, error) { return os.Open(f.path) }
