module github.com/crewgo/crew

go 1.23
