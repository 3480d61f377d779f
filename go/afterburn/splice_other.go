//go:build !linux

package afterburn

// spliceBody: splice(2) is Linux's; elsewhere the body is copied (body.WriteTo).
func spliceBody(b *body, w *response) (int64, bool, error) { return 0, false, nil }

func (c *conn) closePolled() {}
