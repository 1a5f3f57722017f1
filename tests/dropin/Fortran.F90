! The drop-in from Fortran: an MPI program in Fortran, built with the MPI's
! Fortran wrapper (mpifort) against MPI alone, run with libcollc_mpi
! preloaded. Its collective calls reach the drop-in through the Fortran
! entry points (runtime/mpi/Fortran.cpp): `use mpi` (mpif.h's names), or
! `use mpi_f08` when built with -DCOLLC_F08. Every result is checked
! against the value it must have; a wrong one prints FAILED.
!
!   mpirun -np 4 -x LD_PRELOAD=libcollc_mpi.so -x COLLC_MPI_REPORT=1 ./a.out

program dropin_fortran
#ifdef COLLC_F08
  use mpi_f08
#define COMM type(MPI_Comm)
#define DTYPE type(MPI_Datatype)
#define REQUEST type(MPI_Request)
#else
  use mpi
#define COMM integer
#define DTYPE integer
#define REQUEST integer
#endif
  use, intrinsic :: iso_fortran_env, only: error_unit
  implicit none
  integer, parameter :: n = 1000
  integer :: ierr, rank, p, i, j, failures, checks, worst
  integer :: ints(n), sums(n), one, total
  double precision :: reals(n)
  integer, allocatable :: blocks(:), gathered(:), counts(:), displs(:)
  ! Written by MPI_BCAST through its address alone: volatile, so the
  ! compiler reads it again.
  integer, volatile :: at_bottom, pair(2)
  integer(kind=MPI_ADDRESS_KIND) :: address(2)
  integer :: lengths(2)
  DTYPE :: bottom_type
  DTYPE :: types(2)
  DTYPE, allocatable :: wtypes(:)
  COMM :: flipped, ring
  REQUEST :: request

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, p, ierr)
  failures = 0
  checks = 0
  allocate(blocks(2 * p), gathered(2 * p), counts(p), displs(p), wtypes(p))

  ! All-reduce, INTEGER: sum over ranks of rank + i.
  do i = 1, n
    ints(i) = rank + i
  end do
  call MPI_ALLREDUCE(ints, sums, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect('allreduce INTEGER sum', &
              all(sums == [(p * (p - 1) / 2 + p * i, i = 1, n)]) .and. ierr == 0)

  ! All-reduce in place, DOUBLE PRECISION: the largest of rank * i (whole
  ! numbers, exact).
  do i = 1, n
    reals(i) = dble(rank) * dble(i)
  end do
  call MPI_ALLREDUCE(MPI_IN_PLACE, reals, n, MPI_DOUBLE_PRECISION, MPI_MAX, &
                     MPI_COMM_WORLD, ierr)
  call expect('allreduce in place DOUBLE PRECISION max', &
              all(abs(reals - [(dble(p - 1) * dble(i), i = 1, n)]) < 0.5d0))

  ! Reduce to the last rank, in place there.
  one = rank + 1
  if (rank == p - 1) then
    call MPI_REDUCE(MPI_IN_PLACE, one, 1, MPI_INTEGER, MPI_SUM, p - 1, &
                    MPI_COMM_WORLD, ierr)
    call expect('reduce in place to the last rank', one == p * (p + 1) / 2)
  else
    call MPI_REDUCE(one, total, 1, MPI_INTEGER, MPI_SUM, p - 1, &
                    MPI_COMM_WORLD, ierr)
  end if

  ! Broadcast from the last rank.
  ints = 0
  if (rank == p - 1) ints = [(7 * i, i = 1, n)]
  call MPI_BCAST(ints, n, MPI_INTEGER, p - 1, MPI_COMM_WORLD, ierr)
  call expect('bcast', all(ints == [(7 * i, i = 1, n)]))

  ! All-gather of two INTEGERs each; in place.
  blocks = -1
  blocks(2 * rank + 1) = rank
  blocks(2 * rank + 2) = -rank
  call MPI_ALLGATHER(MPI_IN_PLACE, 0, MPI_INTEGER, blocks, 2, MPI_INTEGER, &
                     MPI_COMM_WORLD, ierr)
  call expect('allgather in place', &
              all(blocks == [((j * (3 - 2 * i), i = 1, 2), j = 0, p - 1)]))

  ! Gather at rank 0; scatter from rank 0.
  one = 10 * rank
  gathered = -1
  call MPI_GATHER(one, 1, MPI_INTEGER, gathered, 1, MPI_INTEGER, 0, &
                  MPI_COMM_WORLD, ierr)
  if (rank == 0) call expect('gather', all(gathered(1:p) == [(10 * j, j = 0, p - 1)]))
  blocks(1:p) = [(j * j, j = 0, p - 1)]
  call MPI_SCATTER(blocks, 1, MPI_INTEGER, one, 1, MPI_INTEGER, 0, &
                   MPI_COMM_WORLD, ierr)
  call expect('scatter', one == rank * rank)

  ! All-to-all: block j of rank r is 100 r + j.
  blocks(1:p) = [(100 * rank + j, j = 0, p - 1)]
  call MPI_ALLTOALL(blocks, 1, MPI_INTEGER, gathered, 1, MPI_INTEGER, &
                    MPI_COMM_WORLD, ierr)
  call expect('alltoall', all(gathered(1:p) == [(100 * j + rank, j = 0, p - 1)]))

  ! Inclusive scan of rank + 1.
  one = rank + 1
  call MPI_SCAN(one, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect('scan', total == (rank + 1) * (rank + 2) / 2)

  ! Reduce-scatter of one block each: block j of rank r is r + j.
  blocks(1:p) = [(rank + j, j = 0, p - 1)]
  call MPI_REDUCE_SCATTER_BLOCK(blocks, total, 1, MPI_INTEGER, MPI_SUM, &
                                MPI_COMM_WORLD, ierr)
  call expect('reduce_scatter_block', total == p * (p - 1) / 2 + p * rank)

  ! All-gather with equal counts, the blocks in reverse order.
  counts = 1
  displs = [(p - 1 - j, j = 0, p - 1)]
  one = 3 * rank
  call MPI_ALLGATHERV(one, 1, MPI_INTEGER, gathered, counts, displs, &
                      MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call expect('allgatherv', all(gathered(1:p) == [(3 * (p - 1 - j), j = 0, p - 1)]))

  ! Gather with counts only the root knows (MPI's own runs it).
  displs = [(j, j = 0, p - 1)]
  call MPI_GATHERV(one, 1, MPI_INTEGER, gathered, counts, displs, &
                   MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) call expect('gatherv', all(gathered(1:p) == [(3 * j, j = 0, p - 1)]))

  ! A broadcast of a type at an absolute address, from MPI_BOTTOM.
  at_bottom = 0
  if (rank == 0) at_bottom = 4242
  call MPI_GET_ADDRESS(at_bottom, address(1), ierr)
  lengths(1) = 1
  types(1) = MPI_INTEGER
  call MPI_TYPE_CREATE_STRUCT(1, lengths, address, types, bottom_type, ierr)
  call MPI_TYPE_COMMIT(bottom_type, ierr)
  call MPI_BCAST(MPI_BOTTOM, 1, bottom_type, 0, MPI_COMM_WORLD, ierr)
  call MPI_TYPE_FREE(bottom_type, ierr)
  call expect('bcast from MPI_BOTTOM', at_bottom == 4242)

  ! An all-gather from MPI_BOTTOM of two integers at absolute addresses, the
  ! second first: a type every layer packs (MPICH's MPI_Pack refuses to
  ! read from MPI_BOTTOM itself).
  pair = [10 * rank + 1, 10 * rank + 2]
  call MPI_GET_ADDRESS(pair(2), address(1), ierr)
  call MPI_GET_ADDRESS(pair(1), address(2), ierr)
  lengths = 1
  types = MPI_INTEGER
  call MPI_TYPE_CREATE_STRUCT(2, lengths, address, types, bottom_type, ierr)
  call MPI_TYPE_COMMIT(bottom_type, ierr)
  call MPI_ALLGATHER(MPI_BOTTOM, 1, bottom_type, gathered, 2, MPI_INTEGER, &
                     MPI_COMM_WORLD, ierr)
  call MPI_TYPE_FREE(bottom_type, ierr)
  call expect('allgather from MPI_BOTTOM, pairs second first', &
              all(gathered(1:2 * p) == [(10 * j + 2, 10 * j + 1, j = 0, p - 1)]))

  ! A communicator freed and another made in its place (Open MPI gives it
  ! the same handle), its ranks in another order: a reduction on it must not
  ! reuse what the drop-in kept of the freed one.
  do j = 1, 3
    call MPI_COMM_SPLIT(MPI_COMM_WORLD, 0, merge(-rank, rank, mod(j, 2) == 1), &
                        flipped, ierr)
    one = rank
    total = -1
    call MPI_REDUCE(one, total, 1, MPI_INTEGER, MPI_SUM, 0, flipped, ierr)
    if ((mod(j, 2) == 1 .and. rank == p - 1) .or. (mod(j, 2) == 0 .and. rank == 0)) &
      call expect('reduce on a communicator made after a free', total == p * (p - 1) / 2)
    call MPI_COMM_FREE(flipped, ierr)
  end do

  ! The calls no schedule runs (a barrier, nonblocking calls) go to MPI's
  ! own, counted as handed on.
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call expect('barrier', ierr == 0)
  one = rank + 1
  total = -1
  call MPI_IALLREDUCE(one, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                      request, ierr)
  call MPI_WAIT(request, MPI_STATUS_IGNORE, ierr)
  call expect('iallreduce', total == p * (p + 1) / 2)
  blocks(1:p) = [(100 * rank + j, j = 0, p - 1)]
  gathered = -1
  call MPI_IALLTOALL(blocks, 1, MPI_INTEGER, gathered, 1, MPI_INTEGER, &
                     MPI_COMM_WORLD, request, ierr)
  call MPI_WAIT(request, MPI_STATUS_IGNORE, ierr)
  call expect('ialltoall', all(gathered(1:p) == [(100 * j + rank, j = 0, p - 1)]))
  ints = 0
  if (rank == 0) ints = [(3 * i, i = 1, n)]
  call MPI_IBCAST(ints, n, MPI_INTEGER, 0, MPI_COMM_WORLD, request, ierr)
  call MPI_WAIT(request, MPI_STATUS_IGNORE, ierr)
  call expect('ibcast', all(ints == [(3 * i, i = 1, n)]))
  ! All-to-all with a type per rank (alltoallw): block j of rank r is
  ! 100 r + j, as above.
  wtypes = MPI_INTEGER
  counts = 1
  displs = [(4 * j, j = 0, p - 1)] ! in bytes
  gathered = -1
  call MPI_ALLTOALLW(blocks, counts, displs, wtypes, gathered, counts, &
                     displs, wtypes, MPI_COMM_WORLD, ierr)
  call expect('alltoallw', all(gathered(1:p) == [(100 * j + rank, j = 0, p - 1)]))
  ! A neighbour all-gather on the ranks as a ring: from rank - 1, rank + 1.
  call MPI_CART_CREATE(MPI_COMM_WORLD, 1, [p], [.true.], .false., ring, ierr)
  one = 5 * rank
  gathered = -1
  call MPI_NEIGHBOR_ALLGATHER(one, 1, MPI_INTEGER, gathered, 1, MPI_INTEGER, &
                              ring, ierr)
  call expect('neighbor_allgather', gathered(1) == 5 * modulo(rank - 1, p) &
              .and. gathered(2) == 5 * modulo(rank + 1, p))
  call MPI_COMM_FREE(ring, ierr)
  call MPI_IBARRIER(MPI_COMM_WORLD, request, ierr)
  call MPI_WAIT(request, MPI_STATUS_IGNORE, ierr)
  call expect('ibarrier', ierr == 0)

  call MPI_ALLREDUCE(failures, worst, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  ! On standard error, before the drop-in's report (MPI_FINALIZE): the test
  ! reads both, in this order.
  if (rank == 0 .and. worst == 0) then
#ifdef COLLC_F08
    write (error_unit, '(a, i0, a, i0, a)') 'fortran (use mpi_f08), ', p, &
      ' ranks: ', checks, ' checks passed at rank 0, none failed anywhere'
#else
    write (error_unit, '(a, i0, a, i0, a)') 'fortran (use mpi), ', p, &
      ' ranks: ', checks, ' checks passed at rank 0, none failed anywhere'
#endif
    flush (error_unit)
  end if
  call MPI_FINALIZE(ierr)

contains

  subroutine expect(what, ok)
    character(len=*), intent(in) :: what
    logical, intent(in) :: ok
    checks = checks + 1
    if (.not. ok) then
      failures = failures + 1
      print '(a, a, a, i0)', 'FAILED: ', what, ' at rank ', rank
    end if
  end subroutine expect

end program dropin_fortran
