package httplimit

import (
	"net/http"

	"github.com/shmzone/shmzone/limiter/admit"
)

// serveRefund runs next with a writer that keeps the status, and ends p
// with it. A handler that panics ends p with 500.
func serveRefund(w http.ResponseWriter, r *http.Request, next http.Handler, p admit.Pass) {
	sw := &statusWriter{ResponseWriter: w}
	returned := false
	defer func() {
		switch {
		case !returned && sw.status == 0:
			p.Finish(http.StatusInternalServerError)
		case sw.status == 0:
			p.Finish(http.StatusOK)
		default:
			p.Finish(sw.status)
		}
	}()
	next.ServeHTTP(sw, r)
	returned = true
}

// statusWriter is a ResponseWriter that keeps the final status it was
// given. Unwrap lets http.ResponseController reach the writer beneath.
type statusWriter struct {
	http.ResponseWriter
	status int // 0 until a final status or a body is written
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush flushes the writer beneath, if it can.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap returns the writer beneath, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
