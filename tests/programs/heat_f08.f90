! The 2-D heat equation (Jacobi sweeps of the five-point stencil) on an n x n
! grid split into row blocks, one per rank, with mpi_f08: the halo rows are
! exchanged by MPI_Irecv/MPI_Isend/MPI_Waitall every step, the residual is
! summed by MPI_Allreduce every `check` steps, and rank 0 prints the final
! residual and a checksum (MPI_Reduce).
! Usage: heat_f08 [n [steps [check]]]   (defaults 1024 1000 10)
program heat_f08
  use mpi_f08
  implicit none
  integer, parameter :: dp = kind(1.0d0)
  integer :: n, steps, check, me, np, rows, first, up, down, step, i, j
  real(dp), allocatable :: u(:, :), v(:, :)
  real(dp) :: local, residual, total, sum_u
  type(MPI_Request) :: req(4)
  character(len=32) :: arg

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, me)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  n = 1024
  steps = 1000
  check = 10
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read (arg, *) steps
  end if
  if (command_argument_count() >= 3) then
    call get_command_argument(3, arg)
    read (arg, *) check
  end if

  ! rows first..first+rows-1 of the grid's n interior rows belong to this rank
  rows = n / np
  first = me * rows + 1
  if (me < mod(n, np)) then
    rows = rows + 1
    first = first + me
  else
    first = first + mod(n, np)
  end if
  up = me - 1
  down = me + 1
  if (up < 0) up = MPI_PROC_NULL
  if (down >= np) down = MPI_PROC_NULL

  ! columns 0 and n+1 and the outer halo rows are the fixed boundary: 1 on the
  ! top edge of the grid, 0 elsewhere; the interior starts at 0
  allocate (u(0:n + 1, 0:rows + 1), v(0:n + 1, 0:rows + 1))
  u = 0.0_dp
  if (first == 1) u(:, 0) = 1.0_dp
  v = u
  residual = 0.0_dp

  do step = 1, steps
    call MPI_Irecv(u(:, 0), n + 2, MPI_DOUBLE_PRECISION, up, 1, MPI_COMM_WORLD, req(1))
    call MPI_Irecv(u(:, rows + 1), n + 2, MPI_DOUBLE_PRECISION, down, 2, MPI_COMM_WORLD, req(2))
    call MPI_Isend(u(:, 1), n + 2, MPI_DOUBLE_PRECISION, up, 2, MPI_COMM_WORLD, req(3))
    call MPI_Isend(u(:, rows), n + 2, MPI_DOUBLE_PRECISION, down, 1, MPI_COMM_WORLD, req(4))
    call MPI_Waitall(4, req, MPI_STATUSES_IGNORE)
    local = 0.0_dp
    do j = 1, rows
      do i = 1, n
        v(i, j) = 0.25_dp * (u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1))
        local = local + (v(i, j) - u(i, j))**2
      end do
    end do
    u(1:n, 1:rows) = v(1:n, 1:rows)
    if (mod(step, check) == 0 .or. step == steps) then
      call MPI_Allreduce(local, residual, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
      residual = sqrt(residual)
    end if
  end do

  local = sum(u(1:n, 1:rows))
  call MPI_Reduce(local, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD)
  if (me == 0) then
    sum_u = total / real(n, dp)**2
    print '(a, i0, a, i0, a, i0, a, es12.5, a, es12.5)', 'heat_f08: n=', n, ' steps=', steps, ' ranks=', np, &
      ' residual=', residual, ' mean=', sum_u
  end if
  deallocate (u, v)
  call MPI_Finalize()
end program heat_f08
