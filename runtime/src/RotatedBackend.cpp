// A backend whose ranks are another's, rotated (Backend::rotated): every
// peer is renamed on the way in and out, the rest passes through.

#include "collc/Backend.h"

namespace collc::rt {
namespace {

class RotatedBackend final : public Backend {
public:
  RotatedBackend(Backend &inner, int rotation)
      : inner(inner), rotation(rotation), n(inner.size()) {}
  bool outlivesCalls() const override { return inner.outlivesCalls(); }
  int rank() const override { return (inner.rank() - rotation + n) % n; }
  int size() const override { return n; }

  int isend(int peer, int tag, const std::vector<Piece> &pieces,
            int &request) override {
    return inner.isend(real(peer), tag, pieces, request);
  }
  int send(int peer, int tag, const std::vector<Piece> &pieces) override {
    return inner.send(real(peer), tag, pieces);
  }
  int recv(int peer, int tag, const std::vector<Piece> &pieces,
           size_t &bytes) override {
    return inner.recv(real(peer), tag, pieces, bytes);
  }
  int sendrecv(int dest, int sendTag, const std::vector<Piece> &out,
               int source, int recvTag, const std::vector<Piece> &in,
               size_t &bytes) override {
    return inner.sendrecv(real(dest), sendTag, out, real(source), recvTag, in,
                          bytes);
  }
  int sendOne(int peer, int tag, Piece piece) override {
    return inner.sendOne(real(peer), tag, piece);
  }
  int recvOne(int peer, int tag, Piece piece, size_t &bytes) override {
    return inner.recvOne(real(peer), tag, piece, bytes);
  }
  int sendrecvOne(int dest, int sendTag, Piece out, int source, int recvTag,
                  Piece in, size_t &bytes) override {
    return inner.sendrecvOne(real(dest), sendTag, out, real(source), recvTag,
                             in, bytes);
  }
  int irecv(int peer, int tag, const std::vector<Piece> &pieces,
            int &request) override {
    return inner.irecv(real(peer), tag, pieces, request);
  }
  int wait(int request, size_t &bytes) override {
    return inner.wait(request, bytes);
  }
  int waitAll(int first, int last, size_t *bytes) override {
    return inner.waitAll(first, last, bytes);
  }
  int probe(int peer, int tag, size_t &bytes) override {
    return inner.probe(real(peer), tag, bytes);
  }
  void reset() override { inner.reset(); }
  size_t held() const override { return inner.held(); }

private:
  int real(int peer) const { return (peer + rotation) % n; }
  Backend &inner;
  int rotation, n;
};

} // namespace

Backend *Backend::rotated(int rotation) {
  if (rotation <= 0 || rotation >= size())
    return this;
  std::unique_ptr<Backend> &view = rotations[rotation];
  if (!view)
    view = std::make_unique<RotatedBackend>(*this, rotation);
  return view.get();
}

} // namespace collc::rt
