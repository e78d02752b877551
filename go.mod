module github.com/crewgo/crew

go 1.23

require go.uber.org/goleak v1.3.0
